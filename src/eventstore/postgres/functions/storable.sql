-- storable: the document itself, once it is known that jsonb would take it (else the cast raises its data
-- error). Events are stored as json, which checks only the syntax: it would store a \u0000 or a lone surrogate
-- (\ud800), which jsonb refuses, as does every jsonb or text column a projector copies event contents into,
-- so such an event would stop its projectors for good. The API and the ingest refuse such text first
-- (src/domain/text.ts); this keeps the store's own refusal, with the data error it always gave. Only a
-- document that holds a \u escape at all (JSON.stringify writes one for those and for control characters
-- alone) is converted to be checked.
CREATE OR REPLACE FUNCTION eventstore.storable(p_doc json) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN strpos(p_doc::text, E'\\u') = 0 OR p_doc::jsonb IS NOT NULL THEN p_doc END
$$;
