-- append_streams: several streams, each with its own expected revision, all or nothing, in one statement.
-- A decision that records its events together with another stream's (a command and the claim on its
-- idempotency key) would otherwise take BEGIN, an append per stream and COMMIT: four round trips where one
-- does. The events are the concatenation of every stream's, p_counts[i] of them for p_streams[i]. Errors are
-- append_events' own; the caller works out which stream a DC001 is about (no exception block here: it
-- would cost a subtransaction on every call to name the stream of a rare conflict).
CREATE OR REPLACE FUNCTION eventstore.append_streams(
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
