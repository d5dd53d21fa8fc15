package client

import (
	"context"
	"net/url"
)

// AccountChange is one account for POST slurmdb accounts.
type AccountChange struct {
	Name         string `json:"name"`
	Description  string `json:"description,omitempty"`
	Organization string `json:"organization,omitempty"`
}

// AssociationChange is one association for POST slurmdb associations: a
// user on an account, or (without a user) an account's parent and QOS.
type AssociationChange struct {
	Account   string   `json:"account"`
	User      string   `json:"user,omitempty"`
	Parent    string   `json:"parent_account,omitempty"`
	QOS       []string `json:"qos,omitempty"`
	IsDefault bool     `json:"is_default,omitempty"`
	Default   struct {
		QOS string `json:"qos,omitempty"`
	} `json:"default"`
}

// QOSChange is one QOS for POST slurmdb qos: the whole of what the server
// keeps from a write, so a modify sends the QOS it read with its changes.
type QOSChange struct {
	Name        string      `json:"name"`
	Description string      `json:"description,omitempty"`
	Priority    NoVal       `json:"priority"`
	UsageFactor *FloatNoVal `json:"usage_factor,omitempty"`
	Preempt     struct {
		Mode []string `json:"mode,omitempty"`
	} `json:"preempt"`
}

// AddAccounts creates accounts (POST slurmdb accounts; administrators only).
func (c *Client) AddAccounts(ctx context.Context, accounts []AccountChange) error {
	return c.do(ctx, "POST", "/slurmdb/"+Version+"/accounts", nil, map[string]any{"accounts": accounts}, nil)
}

// SetAssociations adds or changes associations (POST slurmdb associations).
func (c *Client) SetAssociations(ctx context.Context, assocs []AssociationChange) error {
	return c.do(ctx, "POST", "/slurmdb/"+Version+"/associations", nil, map[string]any{"associations": assocs}, nil)
}

// SetQOS adds or replaces QOS (POST slurmdb qos).
func (c *Client) SetQOS(ctx context.Context, list []QOSChange) error {
	return c.do(ctx, "POST", "/slurmdb/"+Version+"/qos", nil, map[string]any{"qos": list}, nil)
}

// DeleteAccount removes an account (DELETE slurmdb account/{name}).
func (c *Client) DeleteAccount(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/slurmdb/"+Version+"/account/"+url.PathEscape(name), nil, nil, nil)
}

// DeleteQOS removes a QOS (DELETE slurmdb qos/{name}).
func (c *Client) DeleteQOS(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/slurmdb/"+Version+"/qos/"+url.PathEscape(name), nil, nil, nil)
}
