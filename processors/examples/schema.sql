-- The business tables of the example handlers. `inbox dev` applies this after migrating;
-- in a real app, your own migrations own these tables.
create table if not exists payments (
    id           bigint generated always as identity primary key,
    event_id     bigint not null unique,
    provider_id  text not null,
    amount       bigint not null,
    currency     text not null,
    recorded_at  timestamptz not null default now()
);

create table if not exists github_deliveries (
    event_id     bigint primary key,
    kind         text not null,
    recorded_at  timestamptz not null default now()
);
