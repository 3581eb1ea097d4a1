// The fleet console's single-page app: navigation and the page the hash route names. Views are
// preact components written with htm tagged templates: preact is a 4 KB (gzip) React-compatible
// renderer with hooks, kept by a large community; htm gives it JSX-like templates in plain
// TypeScript, so the bundle needs no JSX transform and esbuild builds it as it is.
import { html } from 'htm/preact';
import { render, type VNode } from 'preact';
import { startAvailabilityHistory } from './availability-history.ts';
import { ClusterPage } from './cluster.ts';
import { EventsPage } from './events.ts';
import { FleetPage } from './fleet.ts';
import { PlacementsPage } from './placements.ts';
import type { Route } from './route.ts';
import { useRoute } from './router.ts';

function Page({ route }: { route: Route }): VNode {
  switch (route.page) {
    case 'fleet':
      return html`<${FleetPage} />`;
    case 'cluster':
      return html`<${ClusterPage} key=${route.name} name=${route.name} />`;
    case 'placements':
      return html`<${PlacementsPage} />`;
    case 'events':
      return html`<${EventsPage} />`;
    default:
      return html`<p data-testid="not-found-page">No such page: ${route.hash}. <a href="#/">Fleet</a></p>`;
  }
}

function App(): VNode {
  const route = useRoute();
  const link = (href: string, label: string, active: boolean): VNode =>
    html`<a href=${href} class=${active ? 'active' : ''}>${label}</a>`;
  return html`<header>
      <span class="brand">tether</span>
      <nav>
        ${link('#/', 'Fleet', route.page === 'fleet' || route.page === 'cluster')}
        ${link('#/placements', 'Placements', route.page === 'placements')}
        ${link('#/events', 'Events', route.page === 'events')}
      </nav>
    </header>
    <main><${Page} route=${route} /></main>`;
}

startAvailabilityHistory();
const root = document.getElementById('app');
if (root) render(html`<${App} />`, root);
