-- find_repeated_append: the stored result of an earlier append of exactly these event ids to this stream,
-- or no row. Ids stored elsewhere, or only some of them stored, are a conflict (DC002).
CREATE OR REPLACE FUNCTION eventstore.find_repeated_append(p_stream text, p_ids uuid[])
RETURNS TABLE (next_revision bigint, last_transaction_id xid8, last_global_position bigint)
LANGUAGE plpgsql AS $$
DECLARE
  v_found int;
  v_in_stream int;
BEGIN
  SELECT count(*), count(*) FILTER (WHERE e.stream_name = p_stream)
    INTO v_found, v_in_stream
    FROM eventstore.events e WHERE e.event_id = ANY (p_ids);
  IF v_found = 0 THEN
    RETURN;
  END IF;
  IF v_in_stream <> cardinality(p_ids) OR v_found <> cardinality(p_ids) THEN
    RAISE EXCEPTION 'duplicate event id' USING ERRCODE = 'DC002',
      DETAIL = (SELECT e.event_id::text FROM eventstore.events e WHERE e.event_id = ANY (p_ids) LIMIT 1);
  END IF;
  RETURN QUERY
    SELECT e.stream_revision, e.transaction_id, e.global_position
      FROM eventstore.events e
     WHERE e.event_id = ANY (p_ids)
     ORDER BY e.stream_revision DESC LIMIT 1;
END
$$;
