// The fleet page's plot: clusters Available (and the total) over time since the page opened, from
// availability-history.ts. uPlot draws it on a canvas: small (~50 KB minified), fast with many
// points, no dependencies, and it sets styles only through the CSSOM, which the console's CSP allows.
import { html } from 'htm/preact';
import type { VNode } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { availabilitySamples, onAvailabilitySample } from './availability-history.ts';

const HEIGHT = 160;

function dataOf(): uPlot.AlignedData {
  const samples = availabilitySamples();
  // a step line needs a point at "now" to show how long the last value has held
  const now = Date.now() / 1000;
  const last = samples[samples.length - 1];
  const all = last ? [...samples, { ...last, t: Math.max(now, last.t) }] : [];
  return [all.map((s) => s.t), all.map((s) => s.available), all.map((s) => s.total)];
}

export function AvailabilityPlot(): VNode {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const target = el.current;
    if (!target) return;
    const stepped = uPlot.paths.stepped?.({ align: 1 });
    const plot = new uPlot(
      {
        width: Math.max(300, target.clientWidth),
        height: HEIGHT,
        scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
        axes: [{}, { label: 'clusters' }],
        series: [
          {},
          { label: 'Available', stroke: '#2e8540', width: 2, ...(stepped ? { paths: stepped } : {}) },
          {
            label: 'Total',
            stroke: '#6b7280',
            width: 1,
            dash: [4, 4],
            ...(stepped ? { paths: stepped } : {}),
          },
        ],
      },
      dataOf(),
      target,
    );
    const off = onAvailabilitySample(() => plot.setData(dataOf()));
    const onResize = (): void => plot.setSize({ width: Math.max(300, target.clientWidth), height: HEIGHT });
    window.addEventListener('resize', onResize);
    return () => {
      off();
      window.removeEventListener('resize', onResize);
      plot.destroy();
    };
  }, []);
  return html`<div class="plot" data-testid="availability-plot" ref=${el}></div>`;
}
