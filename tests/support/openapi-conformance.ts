import type { RequestListener, ServerResponse } from 'node:http';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { openApiDocument, UNDOCUMENTED_ROUTES } from '../../src/api/openapi/document.js';

/**
 * Every answer the API under test gives is held to the OpenAPI document: its status must be listed for
 * the operation, its media type and body must fit what that status describes, every header it carries
 * must be documented there (and every required one present), whatever the test itself checked. The
 * mismatches of a run are collected and fail it at the end (tests/support/root-hooks.ts).
 */

type Json = Record<string, unknown>;

interface Operation {
  readonly method: string;
  readonly template: string;
  readonly pattern: RegExp;
  readonly responses: Record<string, Json>;
}

// Headers of the connection and the message framing, not of the answer: the HTTP layer adds them.
const TRANSPORT_HEADERS = new Set([
  'content-type',
  'content-length',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
]);
// Enough for any JSON body the API sends; a longer one (only this document) is checked up to its media type.
const BODY_LIMIT = 1024 * 1024;

// Schemas and headers are the same whatever the deployment; only servers and paths depend on it.
const document = openApiDocument();
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
addFormats.default(ajv);
ajv.addSchema({ $id: 'openapi', components: document.components }, 'openapi');

/** The operations of the document a deployment at `publicBaseUrl` serves, as express would match them. */
function operationsOf(publicBaseUrl?: string): Operation[] {
  const served = openApiDocument(publicBaseUrl);
  return (
    Object.entries(served.paths as Record<string, Record<string, Json>>)
      .flatMap(([template, item]) =>
        Object.entries(item).map(([method, operation]) => ({
          method: method.toUpperCase(),
          template,
          // As express matches: case-insensitive, one trailing slash allowed, a parameter is one segment.
          pattern: new RegExp(`^${template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
          responses: operation.responses as Record<string, Json>,
        })),
      )
      // A literal segment wins over a parameter, as the routes are declared.
      .sort((a, b) => (a.template.match(/\{/g)?.length ?? 0) - (b.template.match(/\{/g)?.length ?? 0))
  );
}

const validators = new Map<string, ValidateFunction>();

/** A response schema, its references resolved in the document's components. */
function validatorFor(key: string, schema: Json): ValidateFunction {
  let validate = validators.get(key);
  if (validate === undefined) {
    const anchored = JSON.parse(
      JSON.stringify(schema).replaceAll('"#/components/', '"openapi#/components/'),
    ) as Json;
    validate = ajv.compile(anchored);
    validators.set(key, validate);
  }
  return validate;
}

/** One answer as it went out. `body` is undefined when it was too long to keep. */
export interface SentAnswer {
  readonly method: string;
  readonly path: string;
  readonly status: number;
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: Buffer | undefined;
}

/**
 * A request for no documented operation (an unknown path, or a method a path does not serve) is answered
 * by the edge alone, as the document's description says: an Error body, with these statuses and headers.
 */
const UNDOCUMENTED_REQUEST = {
  statuses: new Set(['400', '401', '404', '405', '413', '415', '422', '429', '500', '503']),
  headers: new Set(['x-request-id', 'etag', 'www-authenticate', 'allow', 'retry-after']),
};

/** How `answer` departs from the document, one line each: [] when it is an answer the document describes. */
export function answerMismatches(
  answer: SentAnswer,
  operations: readonly Operation[] = operationsOf(),
): { operation?: string; problems: string[] } {
  const { method, path, headers, body } = answer;
  const status = String(answer.status);
  const operation =
    operations.find((o) => o.method === method && o.pattern.test(path)) ??
    (method === 'HEAD' ? operations.find((o) => o.method === 'GET' && o.pattern.test(path)) : undefined);
  const problems: string[] = [];
  if (operation === undefined) {
    if (!UNDOCUMENTED_REQUEST.statuses.has(status))
      problems.push(`status ${status} for no documented operation`);
    for (const name of Object.keys(headers))
      if (!TRANSPORT_HEADERS.has(name) && !UNDOCUMENTED_REQUEST.headers.has(name))
        problems.push(`header ${name} for no documented operation`);
    if (body !== undefined && body.length > 0 && method !== 'HEAD')
      problems.push(
        ...bodyProblems('error', headers, body, { 'application/json': { schema: ref('Error') } }),
      );
    return { problems };
  }
  const name = `${operation.method} ${operation.template}`;
  const response = operation.responses[status] ?? operation.responses[`${status[0]}XX`];
  if (response === undefined) return { operation: name, problems: [`status ${status} is not listed`] };

  const documented = Object.fromEntries(
    Object.entries((response.headers ?? {}) as Record<string, Json>).map(([header, h]) => [
      header.toLowerCase(),
      resolve(h),
    ]),
  );
  for (const [header, value] of Object.entries(headers)) {
    if (TRANSPORT_HEADERS.has(header)) continue;
    const described = documented[header];
    if (described === undefined) {
      problems.push(`header ${header} is not documented`);
      continue;
    }
    const schema = described.schema as Json | undefined;
    if (schema === undefined) continue;
    const typed = schema.type === 'integer' || schema.type === 'number' ? Number(value) : value;
    const validate = validatorFor(`${name} ${status} header ${header}`, schema);
    if (!validate(typed))
      problems.push(`header ${header}: ${JSON.stringify(value)} ${ajv.errorsText(validate.errors)}`);
  }
  for (const [header, described] of Object.entries(documented)) {
    if (described.required === true && headers[header] === undefined)
      problems.push(`required header ${header} is missing`);
  }

  const content = response.content as Record<string, Json> | undefined;
  if (method === 'HEAD' || status === '304') return { operation: name, problems };
  if (body !== undefined && body.length === 0) {
    if (content !== undefined) problems.push('no body, where the document describes one');
    return { operation: name, problems };
  }
  problems.push(...bodyProblems(`${name} ${status}`, headers, body, content ?? {}));
  return { operation: name, problems };
}

const ref = (id: string) => ({ $ref: `#/components/schemas/${id}` });

/** A body against the media types a response lists: a JSON body as a whole, an event stream frame by frame. */
function bodyProblems(
  key: string,
  headers: Readonly<Record<string, string>>,
  body: Buffer | undefined,
  content: Record<string, Json>,
): string[] {
  const mediaType = (headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const media = content[mediaType];
  if (media === undefined) return [`media type ${mediaType || 'none'} is not listed`];
  if (body === undefined || media.schema === undefined) return [];
  if (mediaType === 'text/event-stream') return frameProblems(body.toString('utf8'));
  if (mediaType !== 'application/json') return [];
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return ['the body is not JSON'];
  }
  return schemaProblems(key, media.schema as Json, parsed, 'body');
}

/** Each frame of a live stream: its data against the LiveFrame schema its event names. */
function frameProblems(stream: string): string[] {
  return stream.split(/\n\n/).flatMap((frame) => {
    const event = /^event: (.*)$/m.exec(frame)?.[1];
    const data = /^data: (.*)$/m.exec(frame)?.[1];
    if (event === undefined || data === undefined) return [];
    const id = `LiveFrame_${event}`;
    const schemas = (document.components as { schemas: Record<string, Json> }).schemas;
    if (schemas[id] === undefined) return [`frame event ${event} has no schema`];
    try {
      return schemaProblems(id, ref(id), JSON.parse(data), `frame ${event}`);
    } catch {
      return [`frame ${event}: data is not JSON`];
    }
  });
}

function schemaProblems(key: string, schema: Json, value: unknown, what: string): string[] {
  const validate = validatorFor(key, schema);
  if (validate(value)) return [];
  const errors = validate.errors?.map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`).join('; ');
  return [`${what} ${JSON.stringify(value).slice(0, 300)}: ${errors}`];
}

const mismatches: string[] = [];
let checked = 0;
let unmatched = 0;

/** What went against the document so far in this run, one line each; and how many answers were checked. */
export function conformanceReport() {
  return { checked, unmatched, mismatches: [...mismatches] };
}

/**
 * `app`, with each of its answers checked against the document it serves (its deployment at
 * `publicBaseUrl`) once the answer is sent or cut off. The operator-only routes are left out, as the
 * document leaves them out.
 */
export function checkedAgainstDocument(app: RequestListener, publicBaseUrl: string): RequestListener {
  const operations = operationsOf(publicBaseUrl);
  return (req, res) => {
    const method = req.method ?? 'GET';
    const path = (req.url ?? '/').split('?')[0]!;
    if (UNDOCUMENTED_ROUTES.includes(`${method} ${path}`)) return app(req, res);
    const chunks: Buffer[] = [];
    let size = 0;
    const keep = (chunk: unknown, encoding?: unknown) => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function' || size > BODY_LIMIT) return;
      const buffer = Buffer.isBuffer(chunk)
        ? chunk
        : Buffer.from(chunk as string, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
      size += buffer.length;
      if (size <= BODY_LIMIT) chunks.push(buffer);
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
    res.write = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return write(...args);
    }) as typeof res.write;
    res.end = ((...args: unknown[]) => {
      keep(args[0], args[1]);
      return end(...args);
    }) as typeof res.end;
    res.once('close', () => {
      if (!res.headersSent) return;
      const body = size > BODY_LIMIT ? undefined : Buffer.concat(chunks);
      const answer = { method, path, status: res.statusCode, headers: sentHeaders(res), body };
      const { operation, problems } = answerMismatches(answer, operations);
      if (operation === undefined) unmatched++;
      else checked++;
      const where = `${method} ${path} ${res.statusCode} (${operation ?? 'no documented operation'})`;
      for (const problem of problems) mismatches.push(`${where}: ${problem}`);
    });
    app(req, res);
  };
}

/** A header object, or the shared one its $ref names. */
function resolve(header: Json): Json {
  const ref = header.$ref;
  if (typeof ref !== 'string') return header;
  const name = ref.replace('#/components/headers/', '');
  return ((document.components as { headers: Record<string, Json> }).headers[name] ?? {}) as Json;
}

/** The headers as they went out, lower-cased; a header sent twice is joined as HTTP allows. */
function sentHeaders(res: ServerResponse): Record<string, string> {
  const raw = (res as unknown as { _header?: string | null })._header ?? '';
  const headers: Record<string, string> = {};
  for (const line of raw.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}
