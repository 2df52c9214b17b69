ALTER TABLE journal ADD COLUMN user_authorization TEXT;
CREATE INDEX IF NOT EXISTS journal_user_authorization ON journal (user_authorization)
    WHERE user_authorization IS NOT NULL;
