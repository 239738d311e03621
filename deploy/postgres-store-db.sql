-- docker-compose.two-hosts.yml: the hypatia-lite shelf's own database beside the state database
-- (MEMORY_WORKER_STORE_SHELF_URL); run once, when the PostgreSQL volume is created.
CREATE DATABASE memory_store OWNER memory;
