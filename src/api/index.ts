// Public surface of src/api: OCM kinds as TS types, their resource descriptors, the names OCM
// components key on, and the CRDs tether installs. The schema builders stay internal.

export * from './addon.ts';
export * from './addon-crds.ts';
export * from './authentication.ts';
export * from './cluster.ts';
export * from './clusterprofile.ts';
export * from './conditions.ts';
export * from './crds.ts';
export * from './gitops.ts';
export * from './placement.ts';
export * from './placement-crds.ts';
export { type ApiResource, apiVersionOf, crdNameOf } from './resource.ts';
export type { CrdManifest, CrdManifestVersion, JsonSchema, PrinterColumn } from './schema.ts';
export * from './work.ts';
export * from './work-crds.ts';
