// v1alpha1 ⇄ v1beta1 conversion of ClusterManagementAddOn and ManagedClusterAddOn, with OCM's
// mappings: supportedConfigs[].defaultConfig ⇄ defaultConfigs (a sentinel name for "no default"),
// status.defaultconfigReferences ⇄ defaultConfigReferences, installNamespace ⇄ an annotation,
// signerName-based registrations ⇄ typed kubeClient/customSigner ones, kubeClientDriver ⇄ the
// kubeClient registration's driver, configReferences' deprecated name/namespace ⇄ desiredConfig.
// Pure functions on plain JSON objects: no I/O, inputs are never mutated. Fields a function does
// not know are copied as they are (the API server prunes what the target schema lacks).

import {
  addonApiGroup,
  installNamespaceAnnotation,
  kubeApiserverClientSignerName,
  reservedNoDefaultConfigName,
} from '../api/addon.ts';

export type JsonObject = Record<string, unknown>;

export type AddonVersion = 'v1alpha1' | 'v1beta1';

/** The kinds whose two versions differ and so convert through the webhook. */
export const convertibleKinds = ['ClusterManagementAddOn', 'ManagedClusterAddOn'] as const;
export type ConvertibleKind = (typeof convertibleKinds)[number];

/** An object that cannot be converted; the message names what is wrong with it. */
export class AddonConversionError extends Error {}

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

function objectsOf(value: unknown): JsonObject[] | undefined {
  return Array.isArray(value) ? value.filter(isObject) : undefined;
}

/** Copies `from[key]` to `to[newKey]` (removing `key`) when present. */
function rename(obj: JsonObject, key: string, newKey: string): void {
  if (key in obj) {
    obj[newKey] = obj[key];
    delete obj[key];
  }
}

function withoutUndefined(obj: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

function groupResource(entry: JsonObject): JsonObject {
  return withoutUndefined({ group: entry['group'], resource: entry['resource'] });
}

// ---- ClusterManagementAddOn ----

function cmaSpecToV1beta1(spec: JsonObject): JsonObject {
  const out = { ...spec };
  // Deprecated at v1alpha1 and gone at v1beta1; OCM does not carry it either.
  delete out['addOnConfiguration'];
  delete out['supportedConfigs'];
  const supported = objectsOf(spec['supportedConfigs']);
  if (supported?.length) {
    out['defaultConfigs'] = supported.map((c) => {
      const referent = isObject(c['defaultConfig'])
        ? withoutUndefined({ name: c['defaultConfig']['name'], namespace: c['defaultConfig']['namespace'] })
        : { name: reservedNoDefaultConfigName };
      return { ...groupResource(c), ...referent };
    });
  }
  return out;
}

function cmaSpecToV1alpha1(spec: JsonObject): JsonObject {
  const out = { ...spec };
  delete out['defaultConfigs'];
  const defaults = objectsOf(spec['defaultConfigs']);
  if (defaults?.length) {
    out['supportedConfigs'] = defaults.map((c) => {
      const name = c['name'];
      const hasDefault = typeof name === 'string' && name !== '' && name !== reservedNoDefaultConfigName;
      return {
        ...groupResource(c),
        ...(hasDefault ? { defaultConfig: withoutUndefined({ name, namespace: c['namespace'] }) } : {}),
      };
    });
  }
  return out;
}

// ---- ManagedClusterAddOn ----

function registrationToV1beta1(reg: JsonObject, driver: unknown): JsonObject {
  const subject = isObject(reg['subject']) ? reg['subject'] : undefined;
  if (reg['signerName'] === kubeApiserverClientSignerName) {
    return {
      type: 'kubeClient',
      kubeClient: withoutUndefined({
        // OCM's default when the v1alpha1 status names no driver.
        driver: typeof driver === 'string' && driver !== '' ? driver : 'csr',
        subject: subject ? withoutUndefined({ user: subject['user'], groups: subject['groups'] }) : undefined,
      }),
    };
  }
  return {
    type: 'customSigner',
    customSigner: withoutUndefined({
      signerName: reg['signerName'],
      subject: subject
        ? withoutUndefined({
            user: subject['user'],
            groups: subject['groups'],
            organizationUnits: subject['organizationUnit'],
          })
        : undefined,
    }),
  };
}

/** A v1beta1 registration (kubeClient / customSigner) as v1alpha1's signerName + subject. */
export function registrationToV1alpha1(reg: JsonObject): JsonObject {
  if (reg['type'] === 'kubeClient') {
    const config = isObject(reg['kubeClient']) ? reg['kubeClient'] : {};
    const subject = isObject(config['subject']) ? config['subject'] : undefined;
    return withoutUndefined({
      signerName: kubeApiserverClientSignerName,
      subject: subject ? withoutUndefined({ user: subject['user'], groups: subject['groups'] }) : undefined,
    });
  }
  if (reg['type'] === 'customSigner') {
    const config = isObject(reg['customSigner']) ? reg['customSigner'] : {};
    const subject = isObject(config['subject']) ? config['subject'] : undefined;
    return withoutUndefined({
      signerName: config['signerName'],
      subject: subject
        ? withoutUndefined({
            user: subject['user'],
            groups: subject['groups'],
            organizationUnit: subject['organizationUnits'],
          })
        : undefined,
    });
  }
  throw new AddonConversionError(
    `status.registrations[].type must be kubeClient or customSigner, not ${JSON.stringify(reg['type'])}`,
  );
}

function mcaStatusToV1beta1(status: JsonObject): JsonObject {
  const out = { ...status };
  delete out['addOnConfiguration'];
  delete out['kubeClientDriver'];
  const refs = objectsOf(status['configReferences']);
  if (refs) {
    out['configReferences'] = refs.map((ref) => {
      const { name, namespace, ...rest } = ref;
      // Only the deprecated referent set: it becomes the desired config, so nothing is lost.
      if (!isObject(rest['desiredConfig']) && (name || namespace))
        rest['desiredConfig'] = withoutUndefined({ name, namespace });
      return rest;
    });
  }
  const regs = objectsOf(status['registrations']);
  if (regs) out['registrations'] = regs.map((r) => registrationToV1beta1(r, status['kubeClientDriver']));
  return out;
}

function mcaStatusToV1alpha1(status: JsonObject): JsonObject {
  const out = { ...status };
  const refs = objectsOf(status['configReferences']);
  if (refs) {
    out['configReferences'] = refs.map((ref) => {
      const desired = isObject(ref['desiredConfig']) ? ref['desiredConfig'] : undefined;
      return desired
        ? { ...ref, ...withoutUndefined({ name: desired['name'], namespace: desired['namespace'] }) }
        : ref;
    });
  }
  const regs = objectsOf(status['registrations']);
  if (regs) {
    out['registrations'] = regs.map(registrationToV1alpha1);
    const kubeClient = regs.find((r) => r['type'] === 'kubeClient' && isObject(r['kubeClient']));
    const driver = kubeClient && (kubeClient['kubeClient'] as JsonObject)['driver'];
    if (typeof driver === 'string' && driver !== '') out['kubeClientDriver'] = driver;
  }
  return out;
}

function mcaToV1beta1(obj: JsonObject): JsonObject {
  const spec = isObject(obj['spec']) ? { ...obj['spec'] } : undefined;
  const installNamespace = spec?.['installNamespace'];
  if (spec) delete spec['installNamespace'];
  const metadata = isObject(obj['metadata']) ? { ...obj['metadata'] } : {};
  if (typeof installNamespace === 'string' && installNamespace !== '') {
    const annotations = isObject(metadata['annotations']) ? metadata['annotations'] : {};
    metadata['annotations'] = { ...annotations, [installNamespaceAnnotation]: installNamespace };
  }
  return withoutUndefined({
    ...obj,
    metadata,
    spec,
    status: isObject(obj['status']) ? mcaStatusToV1beta1(obj['status']) : obj['status'],
  });
}

function mcaToV1alpha1(obj: JsonObject): JsonObject {
  const metadata = isObject(obj['metadata']) ? { ...obj['metadata'] } : {};
  const spec = isObject(obj['spec']) ? { ...obj['spec'] } : undefined;
  const annotations = isObject(metadata['annotations']) ? { ...metadata['annotations'] } : undefined;
  const installNamespace = annotations?.[installNamespaceAnnotation];
  if (annotations && installNamespaceAnnotation in annotations) {
    // The annotation only stands in for the field v1beta1 lacks; at v1alpha1 the field holds it.
    delete annotations[installNamespaceAnnotation];
    if (Object.keys(annotations).length > 0) metadata['annotations'] = annotations;
    else delete metadata['annotations'];
  }
  const restored =
    typeof installNamespace === 'string' && installNamespace !== '' ? { ...spec, installNamespace } : spec;
  return withoutUndefined({
    ...obj,
    metadata,
    spec: restored,
    status: isObject(obj['status']) ? mcaStatusToV1alpha1(obj['status']) : obj['status'],
  });
}

// ---- entry points ----

function versionOf(apiVersion: unknown): AddonVersion {
  if (apiVersion === `${addonApiGroup}/v1alpha1`) return 'v1alpha1';
  if (apiVersion === `${addonApiGroup}/v1beta1`) return 'v1beta1';
  throw new AddonConversionError(
    `apiVersion ${JSON.stringify(apiVersion)} is not ${addonApiGroup}/v1alpha1 or ${addonApiGroup}/v1beta1`,
  );
}

/**
 * Converts one ClusterManagementAddOn or ManagedClusterAddOn to `desiredApiVersion` (an apiVersion
 * string of the addon group). Returns a new object; an object already at that version comes back
 * as a copy. Throws AddonConversionError for anything else.
 */
export function convertAddonObject(obj: unknown, desiredApiVersion: string): JsonObject {
  if (!isObject(obj)) throw new AddonConversionError('object is not a JSON object');
  const to = versionOf(desiredApiVersion);
  const from = versionOf(obj['apiVersion']);
  const kind = obj['kind'];
  if (!convertibleKinds.includes(kind as ConvertibleKind))
    throw new AddonConversionError(
      `kind ${JSON.stringify(kind)} is not one of ${convertibleKinds.join(', ')}`,
    );
  const copy = structuredClone(obj);
  if (from === to) return copy;
  let out: JsonObject;
  if (kind === 'ClusterManagementAddOn') {
    out = { ...copy };
    if (isObject(copy['spec']))
      out['spec'] = to === 'v1beta1' ? cmaSpecToV1beta1(copy['spec']) : cmaSpecToV1alpha1(copy['spec']);
    if (isObject(copy['status'])) {
      const status = { ...copy['status'] };
      if (to === 'v1beta1') rename(status, 'defaultconfigReferences', 'defaultConfigReferences');
      else rename(status, 'defaultConfigReferences', 'defaultconfigReferences');
      out['status'] = status;
    }
  } else {
    out = to === 'v1beta1' ? mcaToV1beta1(copy) : mcaToV1alpha1(copy);
  }
  out['apiVersion'] = `${addonApiGroup}/${to}`;
  return out;
}
