-- Who started the turn of a block's last write, when it was not the user (another agent, an untrusted client): the
-- system context marks such a block as not the user's words.
ALTER TABLE memory_blocks ADD COLUMN written_by TEXT;
