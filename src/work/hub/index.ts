// Hub-side ManifestWork helpers the CLI calls: create / list / delete works in cluster
// namespaces, and read manifests from files; and the one hub controller of the work API, the
// ttlSecondsAfterFinished garbage collector (garbage-collector.ts).

export {
  expiryOf,
  startWorkGarbageCollector,
  type WorkGarbageCollector,
  type WorkGarbageCollectorOptions,
} from './garbage-collector.ts';
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
