-- Event data and metadata are stored as json, the text exactly as the writer sent it, instead of jsonb. The
-- store never looks inside an event: it stores it and hands it back. jsonb turned every event from text into
-- its binary form on append and back into text on every read (a readings message is read by two
-- projectors), where json only checks the syntax and copies. Side by side in the components bench,
-- PostgreSQL's time per event of a replay fell by 3.6-6.8 µs, and per appended readings message by 13 µs
-- in the sitting without the check below, whose cost alone runs showed no trace of (docs/performance.md,
-- "Event data stored as json"). json also keeps the writer's key order, and the data of a readings message
-- takes 12 % less room.
--
-- The functions that take or return the columns change signature: dropped and made again, with json, as
-- migrations 0003 (append_events), 0304 (append_streams), 0312 (append_batch) and 0305 (the pages, with
-- 0402's work_mem) left them. The column change rewrites eventstore.events once; nodes of the version
-- before must be stopped first (docs/deployment.md, "Upgrading").
DROP FUNCTION eventstore.append_streams(text[], bigint[], integer[], uuid[], text[], jsonb[], jsonb[]);
DROP FUNCTION eventstore.append_events(text, bigint, uuid[], text[], jsonb[], jsonb[]);
DROP FUNCTION eventstore.append_batch(text[], uuid[], text[], jsonb[], jsonb[]);
DROP FUNCTION eventstore.read_all_page(xid8, bigint, integer);
DROP FUNCTION eventstore.read_types_page(xid8, bigint, integer, text[]);

ALTER TABLE eventstore.events
  ALTER COLUMN data TYPE json USING data::json,
  ALTER COLUMN metadata TYPE json USING metadata::json,
  ALTER COLUMN metadata SET DEFAULT '{}'::json;

-- json checks only the syntax: it would store a \u0000 or a lone surrogate (\ud800), which jsonb refuses,
-- as does every jsonb or text column a projector copies event contents into, so such an event would stop
-- its projectors for good. The API and the ingest refuse such text first (src/domain/text.ts); this keeps
-- the store's own refusal, with the data error it always gave. Only a document that holds a \u escape at
-- all (JSON.stringify writes one for those and for control characters alone) is converted to be checked.
CREATE FUNCTION eventstore.storable(p_doc json) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE WHEN strpos(p_doc::text, E'\\u') = 0 OR p_doc::jsonb IS NOT NULL THEN p_doc END
$$;

CREATE FUNCTION eventstore.append_events(
  p_stream text,
  p_expected bigint,
  p_ids uuid[],
  p_types text[],
  p_data json[],
  p_metadata json[]
) RETURNS TABLE (next_revision bigint, last_transaction_id xid8, last_global_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_count int := cardinality(p_ids);
  v_current bigint;
BEGIN
  IF v_count IS NULL OR v_count = 0 THEN
    RAISE EXCEPTION 'append_events: empty batch' USING ERRCODE = '22023';
  END IF;

  RETURN QUERY SELECT * FROM eventstore.find_repeated_append(p_stream, p_ids);
  IF FOUND THEN
    RETURN;
  END IF;

  IF p_expected = -1 THEN
    INSERT INTO eventstore.streams (stream_name, revision) VALUES (p_stream, v_count - 1)
      ON CONFLICT (stream_name) DO NOTHING;
    IF NOT FOUND THEN
      RETURN QUERY SELECT * FROM eventstore.find_repeated_append(p_stream, p_ids);
      IF FOUND THEN
        RETURN;
      END IF;
      SELECT s.revision INTO v_current FROM eventstore.streams s WHERE s.stream_name = p_stream;
      RAISE EXCEPTION 'wrong expected revision' USING ERRCODE = 'DC001', DETAIL = v_current::text;
    END IF;
    v_current := -1;
  ELSIF p_expected = -2 THEN
    INSERT INTO eventstore.streams AS s (stream_name, revision) VALUES (p_stream, v_count - 1)
      ON CONFLICT (stream_name) DO UPDATE SET revision = s.revision + v_count
      RETURNING s.revision - v_count INTO v_current;
  ELSE
    UPDATE eventstore.streams s SET revision = s.revision + v_count
      WHERE s.stream_name = p_stream
      RETURNING s.revision - v_count INTO v_current;
    IF NOT FOUND OR (p_expected >= 0 AND v_current <> p_expected) THEN
      -- A concurrent twin of this very append may have won the row lock: then this is a repeat.
      RETURN QUERY SELECT * FROM eventstore.find_repeated_append(p_stream, p_ids);
      IF FOUND THEN
        RETURN;
      END IF;
      RAISE EXCEPTION 'wrong expected revision' USING ERRCODE = 'DC001',
        DETAIL = coalesce(v_current::text, 'no_stream');
    END IF;
  END IF;

  RETURN QUERY
  WITH inserted AS (
    INSERT INTO eventstore.events (stream_name, stream_revision, event_id, event_type, data, metadata)
    SELECT p_stream, v_current + u.ord, u.id, u.type, eventstore.storable(u.data),
           eventstore.storable(coalesce(u.metadata, '{}'::json))
      FROM unnest(p_ids, p_types, p_data, p_metadata) WITH ORDINALITY AS u(id, type, data, metadata, ord)
      ORDER BY u.ord
    RETURNING transaction_id, global_position
  )
  SELECT v_current + v_count, i.transaction_id, max(i.global_position)
    FROM inserted i GROUP BY i.transaction_id;
END
$$;

CREATE FUNCTION eventstore.append_streams(
  p_streams text[],
  p_expected bigint[],
  p_counts integer[],
  p_ids uuid[],
  p_types text[],
  p_data json[],
  p_metadata json[]
) RETURNS TABLE (next_revision bigint, last_transaction_id xid8, last_global_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_first integer := 1;
  v_last integer;
BEGIN
  FOR v_stream IN 1 .. coalesce(cardinality(p_streams), 0) LOOP
    v_last := v_first + p_counts[v_stream] - 1;
    RETURN QUERY
      SELECT * FROM eventstore.append_events(p_streams[v_stream], p_expected[v_stream], p_ids[v_first:v_last],
                                             p_types[v_first:v_last], p_data[v_first:v_last],
                                             p_metadata[v_first:v_last]);
    v_first := v_last + 1;
  END LOOP;
END
$$;

CREATE FUNCTION eventstore.append_batch(
  p_streams text[],
  p_ids uuid[],
  p_types text[],
  p_data json[],
  p_metadata json[]
) RETURNS TABLE (event_id uuid, inserted boolean, transaction_id xid8, global_position bigint)
LANGUAGE sql AS $$
  WITH input AS MATERIALIZED (
    -- The first occurrence of each id that is not already stored.
    SELECT DISTINCT ON (u.id) u.ord, u.stream AS stream_name, u.id AS event_id, u.type AS event_type,
           eventstore.storable(u.data) AS data,
           eventstore.storable(coalesce(u.metadata, '{}'::json)) AS metadata
      FROM unnest(p_streams, p_ids, p_types, p_data, p_metadata) WITH ORDINALITY
           AS u(stream, id, type, data, metadata, ord)
     WHERE NOT EXISTS (SELECT 1 FROM eventstore.events e WHERE e.event_id = u.id)
     ORDER BY u.id, u.ord
  ),
  counts AS (
    SELECT i.stream_name, count(*) AS n FROM input i GROUP BY i.stream_name
  ),
  advanced AS (
    INSERT INTO eventstore.streams AS s (stream_name, revision)
    SELECT c.stream_name, c.n - 1 FROM counts c ORDER BY c.stream_name
    ON CONFLICT (stream_name) DO UPDATE SET revision = s.revision + excluded.revision + 1
    RETURNING s.stream_name, s.revision
  ),
  last_revisions AS (
    SELECT jsonb_object_agg(a.stream_name, a.revision) AS by_stream FROM advanced a
  ),
  numbered AS (
    -- A stream's events take the revisions up to its new last one, in batch order.
    SELECT i.*,
           ((SELECT l.by_stream FROM last_revisions l) ->> i.stream_name)::bigint
             - count(*) OVER per_stream + row_number() OVER per_stream AS stream_revision
      FROM input i
    WINDOW per_stream AS (PARTITION BY i.stream_name ORDER BY i.ord
                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
  ),
  written AS (
    INSERT INTO eventstore.events (stream_name, stream_revision, event_id, event_type, data, metadata)
    SELECT n.stream_name, n.stream_revision, n.event_id, n.event_type, n.data, n.metadata
      FROM numbered n ORDER BY n.ord
    RETURNING eventstore.events.event_id, eventstore.events.transaction_id, eventstore.events.global_position
  )
  SELECT w.event_id, true, w.transaction_id, w.global_position FROM written w
  UNION ALL
  SELECT e.event_id, false, e.transaction_id, e.global_position
    FROM eventstore.events e
   WHERE e.event_id = ANY (p_ids)
$$;

CREATE FUNCTION eventstore.read_all_page(p_tx xid8, p_pos bigint, p_max integer)
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data json, metadata json, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off SET work_mem = '64MB' AS $$
  WITH horizon AS MATERIALIZED (SELECT eventstore.read_horizon() AS xmin),
  page AS (
    SELECT e.event_id, e.event_type, e.data, e.metadata, e.stream_name, e.stream_revision,
           e.transaction_id, e.global_position, e.recorded_at
      FROM eventstore.events e
     WHERE (e.transaction_id, e.global_position) > (p_tx, p_pos)
       AND e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id, e.global_position
     LIMIT p_max
  ),
  head AS (
    SELECT e.transaction_id, e.global_position
      FROM eventstore.events e
     WHERE e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id DESC, e.global_position DESC
     LIMIT 1
  )
  SELECT false, p.event_id, p.event_type, p.data, p.metadata, p.stream_name, p.stream_revision,
         p.transaction_id, p.global_position, p.recorded_at
    FROM page p
  UNION ALL
  SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, h.transaction_id, h.global_position, NULL
    FROM head h
  ORDER BY 1, 8, 9
$$;

-- The same restricted to some types: one ordered range of events_type_order per type, merged.
CREATE FUNCTION eventstore.read_types_page(p_tx xid8, p_pos bigint, p_max integer, p_types text[])
RETURNS TABLE (is_head boolean, event_id uuid, event_type text, data json, metadata json, stream_name text,
               stream_revision bigint, transaction_id xid8, global_position bigint, recorded_at timestamptz)
LANGUAGE sql STABLE SET enable_bitmapscan = off SET work_mem = '64MB' AS $$
  WITH horizon AS MATERIALIZED (SELECT eventstore.read_horizon() AS xmin),
  page AS (
    SELECT e.*
      FROM unnest(p_types) AS t(event_type),
      LATERAL (
        SELECT x.event_id, x.event_type, x.data, x.metadata, x.stream_name, x.stream_revision,
               x.transaction_id, x.global_position, x.recorded_at
          FROM eventstore.events x
         WHERE x.event_type = t.event_type
           AND (x.transaction_id, x.global_position) > (p_tx, p_pos)
           AND x.transaction_id < (SELECT h.xmin FROM horizon h)
         ORDER BY x.transaction_id, x.global_position
         LIMIT p_max
      ) e
     ORDER BY e.transaction_id, e.global_position
     LIMIT p_max
  ),
  head AS (
    SELECT e.transaction_id, e.global_position
      FROM eventstore.events e
     WHERE e.transaction_id < (SELECT h.xmin FROM horizon h)
     ORDER BY e.transaction_id DESC, e.global_position DESC
     LIMIT 1
  )
  SELECT false, p.event_id, p.event_type, p.data, p.metadata, p.stream_name, p.stream_revision,
         p.transaction_id, p.global_position, p.recorded_at
    FROM page p
  UNION ALL
  SELECT true, NULL, NULL, NULL, NULL, NULL, NULL, h.transaction_id, h.global_position, NULL
    FROM head h
  ORDER BY 1, 8, 9
$$;
