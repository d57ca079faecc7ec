-- Quota usage (docs/quotas.md): the six allowances of a tenant's quotaBo are
-- limits for its current service period, consumed by the services that
-- deliver them.
--
-- quota_usage holds what is used, per tenant, counter and period; a period
-- is named by the day it starts (the tenant's startTime, or its creation
-- day), so a renewal starts a new row from 0 and the old one stays readable,
-- with no job that resets anything. A consume is one guarded statement on
-- this row: the limit is checked in the same statement that counts (see
-- consume in src/quotas/quota.usage.sql.ts), and kept as `last_limit`, the
-- limit the row's last consume counted against (what a past period shows).
-- `crossed` holds the thresholds already announced this period (1: 80%,
-- 2: 100%) and `crossed_now` those the last statement crossed, so each is
-- recorded exactly once.
CREATE TABLE quota_usage (
  tenant_id     text     NOT NULL,
  counter       text     NOT NULL,
  period_start  date     NOT NULL,
  used          bigint   NOT NULL DEFAULT 0,
  last_limit    integer  NOT NULL,
  crossed       smallint NOT NULL DEFAULT 0,
  crossed_now   smallint NOT NULL DEFAULT 0,
  CONSTRAINT quota_usage_pkey PRIMARY KEY (tenant_id, counter, period_start),
  CONSTRAINT quota_usage_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id),
  CONSTRAINT quota_usage_used_check CHECK (used >= 0)
);

-- The usage ledger: one row per consumption, its refunds added up in
-- `refunded` (never more than `amount`). It belongs to the usage row it
-- counted in, which the consume has just locked itself. Not to sys_tenant:
-- that key's check share-locks the tenant's row on every consume, and every
-- concurrent consume of a tenant sharing that lock makes PostgreSQL build a
-- multixact on the tenant row (docs/benchmark.md#quota-consumes-read).
CREATE TABLE quota_consumption (
  tenant_id       text        NOT NULL,
  consumption_id  bigint      GENERATED ALWAYS AS IDENTITY (START WITH 1),
  counter         text        NOT NULL,
  period_start    date        NOT NULL,
  amount          integer     NOT NULL,
  refunded        integer     NOT NULL DEFAULT 0,
  reference       text,
  create_by       text        NOT NULL,
  create_time     timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT quota_consumption_pkey PRIMARY KEY (tenant_id, consumption_id),
  CONSTRAINT quota_consumption_usage_fkey FOREIGN KEY (tenant_id, counter, period_start) REFERENCES quota_usage (tenant_id, counter, period_start),
  CONSTRAINT quota_consumption_refund_check CHECK (refunded >= 0 AND refunded <= amount)
);
CREATE INDEX quota_consumption_counter_idx ON quota_consumption (tenant_id, counter, consumption_id);

-- Idempotency-Key: the first answer to a key, kept with the consume or
-- refund it answered, in the same transaction (a refused request keeps
-- none). Kept at least 7 days; a tenant's older keys are dropped as it
-- writes new ones.
CREATE TABLE quota_idempotency (
  tenant_id     text        NOT NULL,
  idem_key      text        NOT NULL,
  request_hash  bytea       NOT NULL,
  response      jsonb       NOT NULL,
  create_time   timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT quota_idempotency_pkey PRIMARY KEY (tenant_id, idem_key)
);
CREATE INDEX quota_idempotency_age_idx ON quota_idempotency (tenant_id, create_time);

-- The six allowances accept -1: unlimited.
ALTER TABLE sys_tenant DROP CONSTRAINT sys_tenant_quota_check;
ALTER TABLE sys_tenant ADD CONSTRAINT sys_tenant_quota_check CHECK (
  enterprise_query >= -1 AND annual_report_query >= -1 AND chain_report >= -1 AND business_report >= -1
  AND risk_report >= -1 AND merchant >= -1 AND risk_report_used >= 0 AND zr >= 0 AND credit >= 0 AND pf >= 0);
