// clusteradm's tree output (`-o tree`, its default for `get`): a `<Kind>` root, one branch per
// object, and below it the object's fields split on `.` into nested `<segment> value` lines, drawn
// with ├──/└── as gotree does. clusteradm walks Go maps, so its order changes from run to run;
// tether sorts every level by name so the output is stable.

/** One object of a tree: its name and its fields, keyed by dotted paths (".Status.Count"). */
export interface TreeObject {
  name: string;
  fields: Record<string, string | number | boolean | readonly string[]>;
}

interface Node {
  value: string;
  children: Map<string, Node>;
}

const newNode = (): Node => ({ value: '', children: new Map() });

/** A value as Go's %v prints it: lists as `[a b]`. */
export function goValue(v: string | number | boolean | readonly string[]): string {
  return Array.isArray(v) ? `[${v.join(' ')}]` : String(v);
}

function render(label: string, node: Node, prefix: string, connector: string, out: string[]): void {
  out.push(`${prefix}${connector}<${label}> ${node.value}`);
  const childPrefix = prefix + (connector === '' ? '' : connector === '└── ' ? '    ' : '│   ');
  const names = [...node.children.keys()].sort();
  names.forEach((name, i) => {
    render(name, node.children.get(name) as Node, childPrefix, i === names.length - 1 ? '└── ' : '├── ', out);
  });
}

/** The whole tree for `kind`, newline-terminated. */
export function formatTree(kind: string, objects: readonly TreeObject[]): string {
  const root = newNode();
  for (const obj of objects) {
    const top = root.children.get(obj.name) ?? newNode();
    root.children.set(obj.name, top);
    for (const [path, value] of Object.entries(obj.fields)) {
      let node = top;
      for (const segment of path.split('.').filter(Boolean)) {
        const next = node.children.get(segment) ?? newNode();
        node.children.set(segment, next);
        node = next;
      }
      node.value = goValue(value);
    }
  }
  const out: string[] = [];
  render(kind, root, '', '', out);
  return `${out.join('\n')}\n`;
}
