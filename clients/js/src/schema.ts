// A small JSON Schema validator for what the AI sends back: tool arguments and structured answers.
// It covers the subset listed in types.ts (JsonSchema), plus local $ref, not, exclusiveMinimum and
// exclusiveMaximum, because schema generators (zod-to-json-schema and the like) emit them. Unknown
// keywords are ignored, as JSON Schema says. Messages name the path ("items[2].name: expected
// string") because the AI reads them to fix its next call.
import type { JsonSchema } from "./types.js";

type Schema = JsonSchema | boolean;

/** Throws a TypeError for what can't be a request's JSON Schema. A Zod schema (safeParse, _def,
 *  _zod) is the usual mistake: it would otherwise be sent as a schema with no constraints. */
export function checkJsonSchema(schema: unknown, name: "inputSchema" | "schema"): void {
  const zodLike = isObject(schema) && (typeof schema.safeParse === "function" || "_def" in schema || "_zod" in schema);
  if (zodLike || !isObject(schema)) {
    throw new TypeError(`${name} must be a JSON Schema object; convert a Zod schema with z.toJSONSchema() or zod-to-json-schema.`);
  }
}

/** Stop collecting after this many errors: the AI needs the first few, not a report. */
const MAX_ERRORS = 8;
/** $ref chains deeper than this are a cycle in the schema, not in the value. */
const MAX_REF_DEPTH = 32;

/** Every way `value` breaks `schema` (at most a few), each naming its path. Empty when valid. */
export function validate(schema: JsonSchema | boolean | undefined, value: unknown): string[] {
  if (schema === undefined) return [];
  const errors: string[] = [];
  check(schema, value, "", { root: typeof schema === "object" ? schema : {}, errors, refDepth: 0 });
  return errors;
}

interface Walk {
  root: JsonSchema;
  errors: string[];
  refDepth: number;
}

function check(schema: Schema, value: unknown, path: string, walk: Walk): void {
  if (walk.errors.length >= MAX_ERRORS) return;
  if (schema === true) return;
  if (schema === false) return fail(walk, path, "not allowed");
  if (!isObject(schema)) return;

  if (typeof schema.$ref === "string") {
    const target = resolveRef(walk.root, schema.$ref);
    if (target === undefined) return fail(walk, path, `unknown schema reference ${schema.$ref}`);
    if (walk.refDepth >= MAX_REF_DEPTH) return fail(walk, path, "schema references go too deep");
    check(target, value, path, { ...walk, refDepth: walk.refDepth + 1 });
  }

  // A wrong type makes every other keyword's message noise: report it alone.
  if (!checkType(schema, value, path, walk)) return;

  if (Array.isArray(schema.enum) && !schema.enum.some((option) => deepEqual(option, value))) {
    fail(walk, path, `expected one of ${schema.enum.map(show).join(", ")}`);
  }
  if ("const" in schema && !deepEqual(schema.const, value)) fail(walk, path, `expected ${show(schema.const)}`);

  if (typeof value === "number") checkNumber(schema, value, path, walk);
  else if (typeof value === "string") checkString(schema, value, path, walk);
  else if (Array.isArray(value)) checkArray(schema, value, path, walk);
  else if (isObject(value)) checkObject(schema, value, path, walk);

  checkCombinators(schema, value, path, walk);
}

function checkType(schema: JsonSchema, value: unknown, path: string, walk: Walk): boolean {
  const declared = schema.type;
  if (declared === undefined) return true;
  const types = (Array.isArray(declared) ? declared : [declared]).filter((t): t is string => typeof t === "string");
  // OpenAPI's nullable: true, which many tool schemas still use.
  if (schema.nullable === true) types.push("null");
  if (types.some((type) => hasType(value, type))) return true;
  fail(walk, path, `expected ${types.join(" or ")}`);
  return false;
}

function hasType(value: unknown, type: string): boolean {
  switch (type) {
    case "string": return typeof value === "string";
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "integer": return typeof value === "number" && Number.isInteger(value);
    case "boolean": return typeof value === "boolean";
    case "null": return value === null;
    case "array": return Array.isArray(value);
    case "object": return isObject(value);
    default: return true; // an unknown type name constrains nothing
  }
}

function checkNumber(schema: JsonSchema, value: number, path: string, walk: Walk): void {
  const { minimum, maximum, exclusiveMinimum, exclusiveMaximum } = schema;
  if (typeof minimum === "number" && value < minimum) fail(walk, path, `expected at least ${minimum}`);
  if (typeof maximum === "number" && value > maximum) fail(walk, path, `expected at most ${maximum}`);
  if (typeof exclusiveMinimum === "number" && value <= exclusiveMinimum) fail(walk, path, `expected more than ${exclusiveMinimum}`);
  if (typeof exclusiveMaximum === "number" && value >= exclusiveMaximum) fail(walk, path, `expected less than ${exclusiveMaximum}`);
}

function checkString(schema: JsonSchema, value: string, path: string, walk: Walk): void {
  // Lengths count characters (code points), not UTF-16 units, as JSON Schema says.
  const length = [...value].length;
  const { minLength, maxLength, pattern } = schema;
  if (typeof minLength === "number" && length < minLength) fail(walk, path, `expected at least ${count(minLength, "character")}`);
  if (typeof maxLength === "number" && length > maxLength) fail(walk, path, `expected at most ${count(maxLength, "character")}`);
  if (typeof pattern === "string") {
    let regex: RegExp | undefined;
    try {
      regex = new RegExp(pattern, "u");
    } catch {
      regex = undefined; // a pattern this engine can't read constrains nothing
    }
    if (regex && !regex.test(value)) fail(walk, path, `expected to match ${pattern}`);
  }
}

function checkArray(schema: JsonSchema, value: unknown[], path: string, walk: Walk): void {
  const { minItems, maxItems } = schema;
  if (typeof minItems === "number" && value.length < minItems) fail(walk, path, `expected at least ${count(minItems, "item")}`);
  if (typeof maxItems === "number" && value.length > maxItems) fail(walk, path, `expected at most ${count(maxItems, "item")}`);
  // prefixItems (2020-12), or items as an array (draft 7): a schema per position.
  const tuple = Array.isArray(schema.prefixItems) ? schema.prefixItems : Array.isArray(schema.items) ? schema.items : [];
  const rest = Array.isArray(schema.items) ? undefined : (schema.items as Schema | undefined);
  value.forEach((item, index) => {
    const itemSchema = index < tuple.length ? (tuple[index] as Schema) : rest;
    if (itemSchema !== undefined) check(itemSchema, item, `${path}[${index}]`, walk);
  });
}

function checkObject(schema: JsonSchema, value: Record<string, unknown>, path: string, walk: Walk): void {
  const properties = isObject(schema.properties) ? (schema.properties as Record<string, Schema>) : {};
  if (Array.isArray(schema.required)) {
    for (const key of schema.required) {
      if (typeof key === "string" && value[key] === undefined) fail(walk, join(path, key), "required");
    }
  }
  const extra = schema.additionalProperties as Schema | undefined;
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined) continue;
    if (Object.hasOwn(properties, key)) check(properties[key] as Schema, item, join(path, key), walk);
    else if (extra === false) fail(walk, join(path, key), "not allowed (no such property)");
    else if (extra !== undefined) check(extra, item, join(path, key), walk);
  }
}

function checkCombinators(schema: JsonSchema, value: unknown, path: string, walk: Walk): void {
  if (Array.isArray(schema.allOf)) for (const part of schema.allOf) check(part as Schema, value, path, walk);

  const branches = (list: unknown) => (list as Schema[]).map((part) => validateWith(part, value, path, walk));
  if (Array.isArray(schema.anyOf)) {
    const results = branches(schema.anyOf);
    if (!results.some((errors) => errors.length === 0)) fail(walk, path, noneMatch(results, path));
  }
  if (Array.isArray(schema.oneOf)) {
    const results = branches(schema.oneOf);
    const matches = results.filter((errors) => errors.length === 0).length;
    if (matches === 0) fail(walk, path, noneMatch(results, path));
    else if (matches > 1) fail(walk, path, "matches more than one of the allowed forms");
  }
  if (schema.not !== undefined && validateWith(schema.not as Schema, value, path, walk).length === 0) {
    fail(walk, path, "matches a form that isn't allowed");
  }
}

/** Runs a branch on its own error list, so a failing anyOf branch doesn't count as an error. */
function validateWith(schema: Schema, value: unknown, path: string, walk: Walk): string[] {
  const errors: string[] = [];
  check(schema, value, path, { ...walk, errors });
  return errors;
}

/** "matches none of the allowed forms (expected string / amount: required)": the first error of
 *  each branch, without the shared path prefix. */
function noneMatch(results: string[][], path: string): string {
  const prefix = `${label(path)}: `;
  const firsts = results.map((errors) => (errors[0] ?? "").replace(prefix, "")).filter(Boolean);
  return `matches none of the allowed forms (${firsts.join(" / ")})`;
}

function resolveRef(root: JsonSchema, ref: string): Schema | undefined {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined; // remote references aren't fetched
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node) && !Array.isArray(node)) return undefined;
    node = (node as Record<string, unknown>)[key];
  }
  return isObject(node) || typeof node === "boolean" ? (node as Schema) : undefined;
}

function fail(walk: Walk, path: string, message: string): void {
  if (walk.errors.length < MAX_ERRORS) walk.errors.push(`${label(path)}: ${message}`);
}

/** The root has no name of its own; "value" reads better than an empty prefix. */
function label(path: string): string {
  return path || "value";
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    return a.length === other.length && a.every((item, i) => deepEqual(item, other[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return keys.length === Object.keys(right).length && keys.every((key) => Object.hasOwn(right, key) && deepEqual(left[key], right[key]));
}
