-- append_events: appends one batch to one stream with an expected revision.
--   p_expected: >= 0 exact revision, -1 no stream, -2 any, -3 stream exists.
-- A batch whose event ids are all already in this stream is an idempotent repeat: nothing is written and
-- the stored result is returned. Raises DC001 (wrong expected revision) or DC002 (duplicate event id).
CREATE OR REPLACE FUNCTION eventstore.append_events(
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
