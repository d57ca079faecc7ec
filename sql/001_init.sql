-- Initial schema. Every tenant-owned table and index leads with tenant_id,
-- the business code of the owning tenant, so no query can reach another
-- tenant's rows through an index without naming the tenant first.
-- Constraint names are part of the API: src/http/error.handler.ts maps them
-- to envelope errors.

CREATE TABLE app_setting (
  key   text PRIMARY KEY,
  value text NOT NULL
);

-- Tenant ids are snowflake-style: milliseconds since 2010-11-04 (Twitter's
-- epoch, which keeps every id at 19 digits until 2079) shifted left 22 bits,
-- plus a shared sequence, so any number of nodes on one database never
-- collide.
CREATE SEQUENCE sys_tenant_snowflake_seq;
CREATE FUNCTION next_snowflake_id() RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - 1288834974657) << 22)
         | (nextval('sys_tenant_snowflake_seq') % 4194304)
$$;

-- Business codes are six digits; a sequence hands them out without retries.
CREATE SEQUENCE sys_tenant_code_seq MINVALUE 100000 MAXVALUE 999999 START 100000 NO CYCLE;

CREATE TABLE sys_tenant (
  id                  bigint      NOT NULL DEFAULT next_snowflake_id(),
  tenant_id           text        NOT NULL DEFAULT nextval('sys_tenant_code_seq')::text,
  tenant_parent       text,
  -- Codes from the platform tenant down to the parent, comma-separated
  -- ('' for the platform itself). tenant_parent never changes, so neither
  -- does this path.
  ancestors           text        NOT NULL DEFAULT '',
  tenant_name         text,
  company_name        text        NOT NULL,
  contact_user_name   text        NOT NULL,
  contact_phone       text        NOT NULL,
  start_time          date,
  end_time            date,
  status              char(1)     NOT NULL DEFAULT '0',
  account_count       integer     NOT NULL DEFAULT -1,
  menu_ids            text        NOT NULL DEFAULT '',
  enterprise_query    integer     NOT NULL DEFAULT 0,
  annual_report_query integer     NOT NULL DEFAULT 0,
  chain_report        integer     NOT NULL DEFAULT 0,
  business_report     integer     NOT NULL DEFAULT 0,
  risk_report         integer     NOT NULL DEFAULT 0,
  merchant            integer     NOT NULL DEFAULT 0,
  risk_report_used    integer     NOT NULL DEFAULT 0,
  zr                  integer     NOT NULL DEFAULT 0,
  credit              integer     NOT NULL DEFAULT 0,
  pf                  integer     NOT NULL DEFAULT 0,
  model_zr            text,
  model_pf            text,
  model_ed            text,
  catalog_zr          text,
  catalog_pf          text,
  catalog_ed          text,
  catalog_rw          text,
  del_flag            char(1)     NOT NULL DEFAULT '0',
  create_by           text        NOT NULL DEFAULT '',
  create_time         timestamptz NOT NULL DEFAULT now(),
  update_by           text        NOT NULL DEFAULT '',
  update_time         timestamptz,
  CONSTRAINT sys_tenant_pkey PRIMARY KEY (id),
  CONSTRAINT sys_tenant_code_key UNIQUE (tenant_id),
  CONSTRAINT sys_tenant_code_check CHECK (tenant_id ~ '^[0-9]{6}$'),
  CONSTRAINT sys_tenant_parent_fkey FOREIGN KEY (tenant_parent) REFERENCES sys_tenant (tenant_id),
  CONSTRAINT sys_tenant_status_check CHECK (status IN ('0', '1')),
  CONSTRAINT sys_tenant_del_flag_check CHECK (del_flag IN ('0', '2')),
  CONSTRAINT sys_tenant_period_check CHECK (start_time IS NULL OR end_time IS NULL OR start_time <= end_time),
  CONSTRAINT sys_tenant_account_count_check CHECK (account_count >= -1),
  CONSTRAINT sys_tenant_quota_check CHECK (
    enterprise_query >= 0 AND annual_report_query >= 0 AND chain_report >= 0 AND business_report >= 0
    AND risk_report >= 0 AND merchant >= 0 AND risk_report_used >= 0 AND zr >= 0 AND credit >= 0 AND pf >= 0)
);
-- Company names are unique among live tenants only: a deleted tenant's name may be reused.
CREATE UNIQUE INDEX sys_tenant_company_name_live_key ON sys_tenant (company_name) WHERE del_flag = '0';
CREATE INDEX sys_tenant_parent_idx ON sys_tenant (tenant_parent);

CREATE TABLE sys_dept (
  tenant_id   text        NOT NULL,
  dept_id     bigint      GENERATED ALWAYS AS IDENTITY (START WITH 100),
  parent_id   bigint      NOT NULL DEFAULT 0,
  -- RuoYi's path: '0' for a top-level department, else parent.ancestors || ',' || parent_id.
  ancestors   text        NOT NULL,
  dept_name   varchar(30) NOT NULL,
  order_num   integer     NOT NULL DEFAULT 0,
  leader      varchar(20),
  phone       varchar(20),
  email       varchar(50),
  status      char(1)     NOT NULL DEFAULT '0',
  del_flag    char(1)     NOT NULL DEFAULT '0',
  create_by   text        NOT NULL DEFAULT '',
  create_time timestamptz NOT NULL DEFAULT now(),
  update_by   text        NOT NULL DEFAULT '',
  update_time timestamptz,
  CONSTRAINT sys_dept_pkey PRIMARY KEY (tenant_id, dept_id),
  CONSTRAINT sys_dept_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id),
  CONSTRAINT sys_dept_not_own_parent_check CHECK (parent_id <> dept_id),
  CONSTRAINT sys_dept_order_num_check CHECK (order_num >= 0),
  CONSTRAINT sys_dept_status_check CHECK (status IN ('0', '1')),
  CONSTRAINT sys_dept_del_flag_check CHECK (del_flag IN ('0', '2'))
);
-- Children of a parent: the tree walks, the has-children checks and the subtree rewrite.
CREATE INDEX sys_dept_parent_idx ON sys_dept (tenant_id, parent_id);
-- Sibling names are unique among live departments; concurrent creates cannot both win.
CREATE UNIQUE INDEX sys_dept_sibling_name_key ON sys_dept (tenant_id, parent_id, dept_name) WHERE del_flag = '0';

CREATE TABLE sys_user (
  tenant_id     text        NOT NULL,
  user_id       bigint      GENERATED ALWAYS AS IDENTITY (START WITH 100),
  dept_id       bigint,
  user_name     varchar(30) NOT NULL,
  nick_name     varchar(30) NOT NULL DEFAULT '',
  email         varchar(50),
  phonenumber   varchar(20),
  status        char(1)     NOT NULL DEFAULT '0',
  del_flag      char(1)     NOT NULL DEFAULT '0',
  role          text        NOT NULL,
  password_hash text        NOT NULL,
  create_by     text        NOT NULL DEFAULT '',
  create_time   timestamptz NOT NULL DEFAULT now(),
  update_by     text        NOT NULL DEFAULT '',
  update_time   timestamptz,
  CONSTRAINT sys_user_pkey PRIMARY KEY (tenant_id, user_id),
  CONSTRAINT sys_user_tenant_fkey FOREIGN KEY (tenant_id) REFERENCES sys_tenant (tenant_id),
  CONSTRAINT sys_user_dept_fkey FOREIGN KEY (tenant_id, dept_id) REFERENCES sys_dept (tenant_id, dept_id),
  CONSTRAINT sys_user_role_check CHECK (role IN ('superadmin', 'admin', 'user')),
  CONSTRAINT sys_user_status_check CHECK (status IN ('0', '1')),
  CONSTRAINT sys_user_del_flag_check CHECK (del_flag IN ('0', '2'))
);
CREATE UNIQUE INDEX sys_user_name_live_key ON sys_user (tenant_id, user_name) WHERE del_flag = '0';
CREATE INDEX sys_user_dept_idx ON sys_user (tenant_id, dept_id);

-- One row per issued token. Logout and password changes revoke rows; the
-- per-request check reads the row, so revocation reaches every node at once.
CREATE TABLE auth_session (
  tenant_id  text        NOT NULL,
  session_id uuid        NOT NULL,
  user_id    bigint      NOT NULL,
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz,
  CONSTRAINT auth_session_pkey PRIMARY KEY (tenant_id, session_id),
  CONSTRAINT auth_session_user_fkey FOREIGN KEY (tenant_id, user_id) REFERENCES sys_user (tenant_id, user_id)
);
CREATE INDEX auth_session_user_idx ON auth_session (tenant_id, user_id);

-- Failed-login counter per tenant code and user name (the tenant may not exist,
-- so no foreign key). Five failures within ten minutes lock for ten minutes.
CREATE TABLE login_lock (
  tenant_id    text        NOT NULL,
  user_name    text        NOT NULL,
  failures     integer     NOT NULL,
  window_start timestamptz NOT NULL,
  locked_until timestamptz,
  CONSTRAINT login_lock_pkey PRIMARY KEY (tenant_id, user_name)
);
