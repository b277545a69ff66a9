-- A page of events is put in order twice (the merge of its event types, then with the head row), and each
-- sort holds whole rows, data and metadata included. A projector's page of 10,000 readings messages is
-- ~7 MB, over the default work_mem (4 MB), so both sorts went to temporary files on every page of a
-- catch-up or replay. The page functions may use enough memory for the largest page a projector asks for.
ALTER FUNCTION eventstore.read_all_page(xid8, bigint, integer) SET work_mem = '64MB';
ALTER FUNCTION eventstore.read_types_page(xid8, bigint, integer, text[]) SET work_mem = '64MB';
