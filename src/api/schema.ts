// OpenAPI v3 schema builders and the CRD manifest shape, in the JSON form the API server reads
// (`x-kubernetes-*`, `default`, `enum` spelled as on the wire). The group modules describe their
// kinds with these; `crds.ts` turns the result into @kubernetes/client-node models. This module
// knows nothing about any particular OCM kind.

import { type ApiResource, crdNameOf } from './resource.ts';

export type JsonSchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

/** The subset of apiextensions.k8s.io/v1 JSONSchemaProps our CRDs use, keyed as on the wire. */
export interface JsonSchema {
  type?: JsonSchemaType;
  description?: string;
  format?: string;
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema;
  items?: JsonSchema;
  required?: string[];
  enum?: readonly (string | number | boolean)[];
  default?: unknown;
  pattern?: string;
  minimum?: number;
  /** With `minimum`: the bound itself is not allowed. */
  exclusiveMinimum?: boolean;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  maxProperties?: number;
  nullable?: boolean;
  anyOf?: JsonSchema[];
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map';
  'x-kubernetes-list-map-keys'?: string[];
  'x-kubernetes-map-type'?: 'atomic' | 'granular';
  /** CEL rules the API server evaluates on this node. */
  'x-kubernetes-validations'?: CelValidation[];
}

/** One `x-kubernetes-validations` entry. */
export interface CelValidation {
  rule: string;
  message?: string;
}

/** Everything but the structural keywords a builder sets itself. */
export type Facets = Omit<JsonSchema, 'type' | 'properties' | 'items' | 'additionalProperties'>;

export function object(properties: Record<string, JsonSchema>, facets: Facets = {}): JsonSchema {
  return { type: 'object', ...facets, properties };
}

export function string(facets: Facets = {}): JsonSchema {
  return { type: 'string', ...facets };
}

/** A string restricted to `values`. */
export function oneOf(values: readonly string[], facets: Facets = {}): JsonSchema {
  return { type: 'string', ...facets, enum: [...values] };
}

export function integer(format: 'int32' | 'int64', facets: Facets = {}): JsonSchema {
  return { type: 'integer', format, ...facets };
}

export function boolean(facets: Facets = {}): JsonSchema {
  return { type: 'boolean', ...facets };
}

/** RFC 3339 timestamp, as metav1.Time serialises. */
export function dateTime(facets: Facets = {}): JsonSchema {
  return { type: 'string', format: 'date-time', ...facets };
}

/** Base64 text, as Go's []byte serialises (CA bundles). */
export function bytes(facets: Facets = {}): JsonSchema {
  return { type: 'string', format: 'byte', ...facets };
}

export function array(items: JsonSchema, facets: Facets = {}): JsonSchema {
  return { type: 'array', ...facets, items };
}

/** A list whose items are identified by `keys` (server-side apply merges items by these keys). */
export function listMap(items: JsonSchema, keys: string[], facets: Facets = {}): JsonSchema {
  return array(items, { ...facets, 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': keys });
}

/** map[string]string */
export function stringMap(facets: Facets = {}): JsonSchema {
  return { type: 'object', ...facets, additionalProperties: { type: 'string' } };
}

/** A resource.Quantity: integer or string, as the API server accepts for quantities. */
export function quantity(facets: Facets = {}): JsonSchema {
  return { ...facets, 'x-kubernetes-int-or-string': true, anyOf: [{ type: 'integer' }, { type: 'string' }] };
}

/** The pattern controller-gen puts on every resource.Quantity (the serialised forms Kubernetes accepts). */
export const resourceQuantityPattern =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$';

/** map[string]resource.Quantity (capacity, allocatable), each value checked as OCM's CRDs do. */
export function quantityMap(facets: Facets = {}): JsonSchema {
  return { type: 'object', ...facets, additionalProperties: quantity({ pattern: resourceQuantityPattern }) };
}

/** An object kept as written: the server neither validates nor prunes inside it. */
export function unstructured(facets: Facets = {}): JsonSchema {
  return { type: 'object', ...facets, 'x-kubernetes-preserve-unknown-fields': true };
}

/** A complete Kubernetes object embedded verbatim (apiVersion, kind and metadata are checked). */
export function embeddedResource(facets: Facets = {}): JsonSchema {
  return {
    type: 'object',
    ...facets,
    'x-kubernetes-embedded-resource': true,
    'x-kubernetes-preserve-unknown-fields': true,
  };
}

export type PrinterColumnType = 'string' | 'boolean' | 'date' | 'integer' | 'number';

export interface PrinterColumn {
  name: string;
  type: PrinterColumnType;
  jsonPath: string;
  description?: string;
  priority?: number;
  format?: string;
}

export interface CrdManifestVersion {
  name: string;
  served: boolean;
  storage: boolean;
  /** served, but kubectl and clients warn that it goes away */
  deprecated?: boolean;
  schema: { openAPIV3Schema: JsonSchema };
  subresources?: { status?: Record<string, never> };
  additionalPrinterColumns?: PrinterColumn[];
}

/** An apiextensions.k8s.io/v1 CustomResourceDefinition as plain JSON, ready for kubectl or a raw request. */
export interface CrdManifest {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: {
    group: string;
    names: {
      plural: string;
      singular: string;
      kind: string;
      listKind: string;
      shortNames?: string[];
    };
    scope: 'Namespaced' | 'Cluster';
    versions: CrdManifestVersion[];
  };
}

export interface CrdDefinition {
  /** Group, storage version, plural, kind and scope. */
  resource: ApiResource;
  description: string;
  spec: JsonSchema;
  /** Presence turns on the status subresource. */
  status?: JsonSchema;
  /** Required top-level fields, e.g. `['spec']`. */
  required?: string[];
  shortNames?: string[];
  printerColumns?: PrinterColumn[];
  /**
   * Older versions served next to the storage version with an identical schema, so the API server
   * converts between them by rewriting apiVersion alone (strategy None).
   */
  alsoServed?: string[];
  /** Of alsoServed, the versions marked deprecated (as OCM marks them). */
  deprecatedVersions?: string[];
}

function rootSchema(d: CrdDefinition): JsonSchema {
  const properties: Record<string, JsonSchema> = {
    apiVersion: string(),
    kind: string(),
    metadata: { type: 'object' },
    spec: structuredClone(d.spec),
  };
  if (d.status) properties['status'] = structuredClone(d.status);
  return object(properties, {
    description: d.description,
    ...(d.required ? { required: [...d.required] } : {}),
  });
}

/** Builds the CRD for one kind; every call returns fresh objects. */
export function defineCrd(d: CrdDefinition): CrdManifest {
  const { resource } = d;
  const versions = [resource.version, ...(d.alsoServed ?? [])].map(
    (name): CrdManifestVersion => ({
      name,
      served: true,
      storage: name === resource.version,
      ...(d.deprecatedVersions?.includes(name) ? { deprecated: true } : {}),
      schema: { openAPIV3Schema: rootSchema(d) },
      ...(d.status ? { subresources: { status: {} } } : {}),
      ...(d.printerColumns ? { additionalPrinterColumns: structuredClone(d.printerColumns) } : {}),
    }),
  );
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdNameOf(resource) },
    spec: {
      group: resource.group,
      names: {
        plural: resource.plural,
        singular: resource.kind.toLowerCase(),
        kind: resource.kind,
        listKind: `${resource.kind}List`,
        ...(d.shortNames ? { shortNames: [...d.shortNames] } : {}),
      },
      scope: resource.namespaced ? 'Namespaced' : 'Cluster',
      versions,
    },
  };
}
