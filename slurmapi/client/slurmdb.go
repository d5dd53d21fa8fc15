package client

import (
	"context"
	"strconv"
	"strings"
)

// QOS is what sacctmgr and sprio show of a QOS (v0.0.44 slurmdb qos).
type QOS struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Priority    NoVal      `json:"priority"`
	UsageFactor FloatNoVal `json:"usage_factor"`
	Preempt     struct {
		Mode []string `json:"mode"`
	} `json:"preempt"`
	Limits struct {
		Max struct {
			WallClock struct {
				Per struct {
					Job NoVal `json:"job"`
				} `json:"per"`
			} `json:"wall_clock"`
			Jobs struct {
				ActiveJobs struct {
					Per struct {
						User NoVal `json:"user"`
					} `json:"per"`
				} `json:"active_jobs"`
			} `json:"jobs"`
			TRES struct {
				Total []TRESCount `json:"total"`
				Per   struct {
					User []TRESCount `json:"user"`
				} `json:"per"`
			} `json:"tres"`
		} `json:"max"`
	} `json:"limits"`
}

// FloatNoVal is a no-value struct holding a float (usage_factor).
type FloatNoVal struct {
	Set      bool    `json:"set"`
	Infinite bool    `json:"infinite"`
	Number   float64 `json:"number"`
}

// TRESCount is one entry of a TRES list.
type TRESCount struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// TRESString writes a TRES list as sacctmgr does: "cpu=8,gres/gpu=16".
func TRESString(list []TRESCount) string {
	parts := make([]string, 0, len(list))
	for _, t := range list {
		name := t.Type
		if t.Name != "" {
			name += "/" + t.Name
		}
		parts = append(parts, name+"="+strconv.FormatInt(t.Count, 10))
	}
	return strings.Join(parts, ",")
}

// Account is what sacctmgr shows of an account.
type Account struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	Organization string `json:"organization"`
}

// User is what sacctmgr shows of a user.
type User struct {
	Name       string   `json:"name"`
	AdminLevel []string `json:"administrator_level"`
	Default    struct {
		Account string `json:"account"`
	} `json:"default"`
}

// Association is what sacctmgr shows of an association.
type Association struct {
	Cluster   string   `json:"cluster"`
	Account   string   `json:"account"`
	User      string   `json:"user"`
	Partition string   `json:"partition"`
	Parent    string   `json:"parent_account"`
	QOS       []string `json:"qos"`
	Default   struct {
		QOS string `json:"qos"`
	} `json:"default"`
	SharesRaw int64 `json:"shares_raw"`
	Max       struct {
		Jobs struct {
			Per struct {
				Submitted NoVal `json:"submitted"`
			} `json:"per"`
		} `json:"jobs"`
	} `json:"max"`
}

// QOSList reads every QOS (GET slurmdb qos).
func (c *Client) QOSList(ctx context.Context) ([]QOS, error) {
	var out struct {
		QOS []QOS `json:"qos"`
	}
	err := c.do(ctx, "GET", "/slurmdb/"+Version+"/qos", nil, nil, &out)
	return out.QOS, err
}

// Accounts reads every account (GET slurmdb accounts).
func (c *Client) Accounts(ctx context.Context) ([]Account, error) {
	var out struct {
		Accounts []Account `json:"accounts"`
	}
	err := c.do(ctx, "GET", "/slurmdb/"+Version+"/accounts", nil, nil, &out)
	return out.Accounts, err
}

// Users reads every user (GET slurmdb users).
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var out struct {
		Users []User `json:"users"`
	}
	err := c.do(ctx, "GET", "/slurmdb/"+Version+"/users", nil, nil, &out)
	return out.Users, err
}

// Associations reads every association (GET slurmdb associations).
func (c *Client) Associations(ctx context.Context) ([]Association, error) {
	var out struct {
		Associations []Association `json:"associations"`
	}
	err := c.do(ctx, "GET", "/slurmdb/"+Version+"/associations", nil, nil, &out)
	return out.Associations, err
}
