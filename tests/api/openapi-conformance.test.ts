import { expect } from 'chai';
import { answerMismatches, type SentAnswer } from '../support/openapi-conformance.js';

/** The check every answer of the suite goes through (tests/support/api-harness.ts) catches what it must. */
describe('the OpenAPI conformance check of the suite', () => {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const base = {
    method: 'GET',
    path: '/v1/devices',
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'r1',
      'cache-control': 'no-store',
    },
    body: json({ devices: [] }),
  } satisfies SentAnswer;
  const errorHeaders = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1' };

  it('passes an answer the document describes', () => {
    expect(answerMismatches(base)).to.deep.equal({ operation: 'GET /v1/devices', problems: [] });
  });

  it('finds a status the operation does not list', () => {
    expect(
      answerMismatches({ ...base, method: 'POST', path: '/v1/pairing/sessions', status: 402 }).problems,
    ).to.deep.equal(['status 402 is not listed']);
  });

  it('finds an undocumented header, a missing required one, and a header value off its schema', () => {
    const { 'x-request-id': _id, ...withoutId } = base.headers;
    const problems = answerMismatches({ ...base, headers: { ...withoutId, 'x-debug': '1' } }).problems;
    expect(problems).to.deep.equal([
      'header x-debug is not documented',
      'required header x-request-id is missing',
    ]);
    const limited = answerMismatches({
      ...base,
      status: 429,
      headers: { ...errorHeaders, 'retry-after': 'soon' },
      body: json({ error: 'rate_limited' }),
    }).problems;
    expect(limited).to.have.length(1);
    expect(limited[0]).to.match(/^header retry-after: "soon"/);
  });

  it('finds a body off its schema, and a media type the status does not list', () => {
    expect(answerMismatches({ ...base, body: json({ devices: 'none' }) }).problems[0]).to.match(
      /^body \{"devices":"none"\}: \/devices must be array/,
    );
    expect(
      answerMismatches({ ...base, headers: { ...base.headers, 'content-type': 'text/html' } }).problems,
    ).to.deep.equal(['media type text/html is not listed']);
  });

  it('checks each live frame against the schema its event names', () => {
    const stream = 'retry: 5000\n\nid: a\nevent: replay_gap\ndata: {"unexpected":true}\n\n: ping\n\n';
    const problems = answerMismatches({
      method: 'GET',
      path: '/v1/live',
      status: 200,
      headers: { 'content-type': 'text/event-stream; charset=utf-8', 'x-request-id': 'r1' },
      body: Buffer.from(stream),
    }).problems;
    expect(problems).to.have.length(1);
    expect(problems[0]).to.match(/^frame replay_gap /);
  });

  it('holds an answer to no documented operation to the edge errors the document names', () => {
    const answer = {
      ...base,
      method: 'PATCH',
      status: 404,
      headers: errorHeaders,
      body: json({ error: 'not_found' }),
    };
    expect(answerMismatches(answer)).to.deep.equal({ problems: [] });
    expect(answerMismatches({ ...base, method: 'PATCH' }).problems).to.deep.equal([
      'status 200 for no documented operation',
      'header cache-control for no documented operation',
      'body {"devices":[]}: / must have required property \'error\'',
    ]);
  });
});
