-- Claims on raw documents as leases (package lease). A claim used to be a
-- conditional re-index of the whole raw document in Elasticsearch (status
-- processing, claimed_by, claimed_at), and every renewal and release another;
-- the raw document is now written once, at the commit point, by the status
-- flip conditional on the version the search returned (seq_no,
-- primary_term). A row is a live claim while lease_until is in the future;
-- an expired one is taken over by the next claim, which counts a stall
-- (stalls) and gives the row a new claim_id, so the old owner's claim no
-- longer matches. done marks a claim whose flip went through: the row is
-- kept until the raw index has refreshed (lease_until), so no replica finds
-- the document pending in a stale search and claims it again.
CREATE TABLE IF NOT EXISTS raw_claims (
    raw_index    VARCHAR(255) NOT NULL,
    doc_id       VARCHAR(512) NOT NULL,
    claimed_by   VARCHAR(255) NOT NULL,
    claimed_at   TIMESTAMPTZ  NOT NULL DEFAULT NOW(),
    lease_until  TIMESTAMPTZ  NOT NULL,
    seq_no       BIGINT       NOT NULL,
    primary_term BIGINT       NOT NULL,
    stalls       INTEGER      NOT NULL DEFAULT 0,
    done         BOOLEAN      NOT NULL DEFAULT FALSE,
    claim_id     BIGSERIAL    NOT NULL UNIQUE,
    PRIMARY KEY (raw_index, doc_id)
);
CREATE INDEX IF NOT EXISTS idx_raw_claims_claimed_by ON raw_claims (claimed_by);
CREATE INDEX IF NOT EXISTS idx_raw_claims_lease_until ON raw_claims (lease_until);
