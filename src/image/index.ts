// The tether container image: built without a daemon by buildah from the project's own Node
// runtime and files (build.ts); see the README's "Container image".

export { IMAGE_HOME, IMAGE_UID, IMAGE_USER } from './base-files.ts';
export {
  buildImage,
  defaultImageArchive,
  IMAGE_APP_DIR,
  IMAGE_ENTRYPOINT,
  IMAGE_MALLOC_ENV,
  type ImageBuildOptions,
  type ImageBuildResult,
  projectVersion,
} from './build.ts';
export { type CachedImage, ensureImage, imageCacheDir, imageInputsDigest } from './cache.ts';
export { IMAGE_NODE_PATH } from './node-runtime.ts';
