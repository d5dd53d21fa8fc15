package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/sluicehq/sluice/accounting/dashboard"
	"github.com/sluicehq/sluice/accounting/report"
)

// The accounting reads go to the ledger's API under /ui/api/ (served by the accounting
// dashboard), which answers sacct's filters, sshare's tree and sreport's tables from
// the ledger; the query parameters are that API's (see accounting/dashboard).

// LedgerJobs is sacct: the jobs matching the query (users, accounts, partitions,
// states, ids, start, end, limit).
func (c *Client) LedgerJobs(ctx context.Context, q url.Values) (dashboard.Jobs, error) {
	var out dashboard.Jobs
	err := c.do(ctx, "GET", dashboard.Prefix+"api/jobs", q, nil, &out)
	return out, err
}

// Shares is sshare: the Fair Tree rows (accounts, users, long).
func (c *Client) Shares(ctx context.Context, q url.Values) (dashboard.FairShare, error) {
	var out dashboard.FairShare
	err := c.do(ctx, "GET", dashboard.Prefix+"api/fairshare", q, nil, &out)
	return out, err
}

// SreportResult is one sreport report: the table as sreport prints it and the rows
// as JSON, kept raw for --json.
type SreportResult struct {
	Table report.Table    `json:"table"`
	Value json.RawMessage `json:"value"`
}

// Sreport runs one report (report, start, end, t, tres, users, accounts, topcount,
// grouping).
func (c *Client) Sreport(ctx context.Context, q url.Values) (SreportResult, error) {
	var out SreportResult
	err := c.do(ctx, "GET", dashboard.Prefix+"api/sreport", q, nil, &out)
	return out, err
}

// TokenUser is the user the client's token names (its sun claim), read without
// checking the signature: the server checks it; this only picks the CLI's defaults.
// "" when the token is not a readable JWT.
func (c *Client) TokenUser() string {
	parts := strings.Split(c.Token, ".")
	if len(parts) != 3 {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var claims struct {
		Sun string `json:"sun"`
	}
	if json.Unmarshal(raw, &claims) != nil {
		return ""
	}
	return claims.Sun
}
