// Public surface of src/addon: the v1alpha1 ⇄ v1beta1 conversion of the addon kinds and the
// webhook that serves it to the API server.
export { AddonConversionError, convertAddonObject, convertibleKinds } from './conversion.ts';
export {
  type AddonConversionWebhookOptions,
  type AddonConversionWebhookServer,
  defaultMaxReviewBytes,
  reviewConversion,
  startAddonConversionWebhook,
} from './conversion-webhook.ts';
export { type LoopbackConversionWebhook, startLoopbackConversionWebhook } from './loopback-webhook.ts';
