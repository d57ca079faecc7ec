-- Webhooks (docs/webhooks.md): endpoints that receive the audit feed.
--
-- An endpoint's cursor is its queue: the position of the last record it
-- has been given (or that its filters skipped). There is no second log;
-- what is pending is read from audit_log (position > cursor). Delivery state
-- lives on the endpoint row: the failed attempts of the record at the head
-- of the queue, when it may be tried again, and the lease that keeps one
-- delivery in flight per endpoint across all nodes.
CREATE TABLE webhook_endpoint (
  tenant_id             text        NOT NULL,
  endpoint_id           bigint      GENERATED ALWAYS AS IDENTITY (START WITH 100),
  url                   text        NOT NULL,
  -- Action names ('dept.move') or prefixes ('dept.*'); empty: every action.
  events                text[]      NOT NULL DEFAULT '{}',
  description           text        NOT NULL DEFAULT '',
  status                char(1)     NOT NULL DEFAULT '0',
  -- Why the service disabled it ('410 Gone', 'retries exhausted', 'cursor expired'); NULL when enabled or disabled by a person.
  disabled_reason       text,
  secret                text        NOT NULL,
  -- After a rotation the old secret keeps signing beside the new one until previous_until.
  previous_secret       text,
  previous_until        timestamptz,
  cursor                bigint      NOT NULL,
  -- Failed attempts at the record after the cursor, and when the next one may run.
  failures              integer     NOT NULL DEFAULT 0,
  retry_at              timestamptz,
  last_error            text,
  -- One delivery in flight per endpoint: the node holding the lease, until when.
  lease_owner           text,
  lease_until           timestamptz,
  create_by             text        NOT NULL,
  create_time           timestamptz NOT NULL DEFAULT now(),
  update_by             text,
  update_time           timestamptz,
  PRIMARY KEY (tenant_id, endpoint_id),
  CONSTRAINT webhook_endpoint_status_check CHECK (status IN ('0', '1'))
);
-- The delivery workers' scan: enabled endpoints only.
CREATE INDEX webhook_endpoint_due_idx ON webhook_endpoint (tenant_id, endpoint_id) WHERE status = '0';

-- The attempt log, kept 7 days: one row per attempt, success or not.
CREATE TABLE webhook_delivery (
  tenant_id     text        NOT NULL,
  endpoint_id   bigint      NOT NULL,
  delivery_id   bigint      GENERATED ALWAYS AS IDENTITY,
  event_id      text        NOT NULL,
  attempt       integer     NOT NULL,
  time          timestamptz NOT NULL DEFAULT now(),
  status_code   integer,
  error         text,
  ms            integer     NOT NULL,
  response      text        NOT NULL DEFAULT '',
  PRIMARY KEY (tenant_id, endpoint_id, delivery_id),
  FOREIGN KEY (tenant_id, endpoint_id) REFERENCES webhook_endpoint ON DELETE CASCADE
);
CREATE INDEX webhook_delivery_time_idx ON webhook_delivery (time);
