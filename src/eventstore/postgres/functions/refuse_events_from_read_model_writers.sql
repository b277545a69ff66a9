-- refuse_events_from_read_model_writers: a connection of the read-model writers may not insert events,
-- because read_horizon does not wait for its transactions (read_horizon.sql). Trigger
-- events_never_from_read_model_writers, triggers.sql.
CREATE OR REPLACE FUNCTION eventstore.refuse_events_from_read_model_writers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('application_name') = 'device-cloud-read-models' THEN
    RAISE EXCEPTION 'a read-model writer may not append events: readers do not wait for its transactions'
      USING ERRCODE = 'DC003';
  END IF;
  RETURN NULL;
END
$$;
