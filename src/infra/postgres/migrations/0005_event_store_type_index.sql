-- Readers that follow only some event types (most projectors) walk this index, one ordered range per
-- type, so a rare type is found without scanning the readings around it.
CREATE INDEX events_type_order ON eventstore.events (event_type, transaction_id, global_position);
