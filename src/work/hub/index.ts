// Hub-side ManifestWork helpers the CLI calls: create / list / delete works in cluster
// namespaces, and read manifests from files. Nothing here runs continuously.

export { loadManifests, manifestFileMaxBytes, manifestsMaxCount, parseManifestFile } from './manifests.ts';
export {
  type CreateAction,
  type CreateManifestWorkOptions,
  type CreateManifestWorkResult,
  createManifestWork,
  type DeleteManifestWorkResult,
  deleteManifestWork,
  formatAge,
  listManifestWorks,
  type ManifestWorkRow,
} from './works.ts';
