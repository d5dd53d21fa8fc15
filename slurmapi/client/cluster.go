package client

import (
	"context"
	"fmt"
	"net/url"
	"slices"
)

// Node is what sinfo and scontrol show of a node (v0.0.44 node).
type Node struct {
	Name            string   `json:"name"`
	Address         string   `json:"address"`
	State           []string `json:"state"`
	Reason          string   `json:"reason"`
	ReasonSetUser   string   `json:"reason_set_by_user"`
	ReasonChangedAt NoVal    `json:"reason_changed_at"`
	Comment         string   `json:"comment"`
	Partitions      []string `json:"partitions"`
	CPUs            int64    `json:"cpus"`
	RealMemory      int64    `json:"real_memory"`
	GRES            string   `json:"gres"`
	GRESUsed        string   `json:"gres_used"`
	AllocCPUs       int64    `json:"alloc_cpus"`
	AllocMemory     int64    `json:"alloc_memory"`
	TRES            string   `json:"tres"`
	TRESUsed        string   `json:"tres_used"`
	Features        []string `json:"features"`
	Topology        string   `json:"topology"`
	BootTime        NoVal    `json:"boot_time"`
	Architecture    string   `json:"architecture"`
	OS              string   `json:"operating_system"`
}

// Partition is what sinfo and scontrol show of a partition (v0.0.45
// partition_info: the first version with the DEFAULT flag).
type Partition struct {
	Name  string `json:"name"`
	Nodes struct {
		Configured string `json:"configured"`
		Total      int64  `json:"total"`
	} `json:"nodes"`
	Accounts struct {
		Allowed string `json:"allowed"`
	} `json:"accounts"`
	QOS struct {
		Allowed string `json:"allowed"`
	} `json:"qos"`
	CPUs struct {
		Total int64 `json:"total"`
	} `json:"cpus"`
	TRES struct {
		Configured string `json:"configured"`
	} `json:"tres"`
	Defaults struct {
		Time NoVal `json:"time"`
	} `json:"defaults"`
	Maximums struct {
		Nodes NoVal `json:"nodes"`
		Time  NoVal `json:"time"`
	} `json:"maximums"`
	Priority struct {
		JobFactor int64 `json:"job_factor"`
		Tier      int64 `json:"tier"`
	} `json:"priority"`
	Partition struct {
		State []string `json:"state"`
	} `json:"partition"`
	Flags []string `json:"flags"`
}

// IsDefault reports whether jobs that name no partition go to this one.
func (p Partition) IsDefault() bool { return slices.Contains(p.Flags, "DEFAULT") }

// partitionVersion is the data_parser version partitions are read in.
const partitionVersion = "v0.0.45"

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/nodes/", nil, nil, &out)
	return out.Nodes, err
}

// Node reads one node; IsNotFound(err) when there is none of that name.
func (c *Client) Node(ctx context.Context, name string) (Node, error) {
	var out struct {
		Nodes []Node `json:"nodes"`
	}
	if err := c.do(ctx, "GET", "/slurm/"+Version+"/node/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return Node{}, err
	}
	if len(out.Nodes) == 0 {
		return Node{}, fmt.Errorf("node %s not found", name)
	}
	return out.Nodes[0], nil
}

// Partitions lists the partitions.
func (c *Client) Partitions(ctx context.Context) ([]Partition, error) {
	var out struct {
		Partitions []Partition `json:"partitions"`
	}
	err := c.do(ctx, "GET", "/slurm/"+partitionVersion+"/partitions/", nil, nil, &out)
	return out.Partitions, err
}

// Partition reads one partition; IsNotFound(err) when there is none of that name.
func (c *Client) Partition(ctx context.Context, name string) (Partition, error) {
	var out struct {
		Partitions []Partition `json:"partitions"`
	}
	if err := c.do(ctx, "GET", "/slurm/"+partitionVersion+"/partition/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return Partition{}, err
	}
	if len(out.Partitions) == 0 {
		return Partition{}, fmt.Errorf("partition %s not found", name)
	}
	return out.Partitions[0], nil
}

// UpdateNode changes a node as scontrol update NodeName= does (POST
// node/{node_name} with an update_node_msg: state DRAIN or RESUME and a
// reason) and returns the server's warnings.
func (c *Client) UpdateNode(ctx context.Context, name string, fields map[string]any) ([]string, error) {
	var out struct {
		Warnings []struct {
			Description string `json:"description"`
		} `json:"warnings"`
	}
	if err := c.do(ctx, "POST", "/slurm/"+Version+"/node/"+url.PathEscape(name), nil, fields, &out); err != nil {
		return nil, err
	}
	var warnings []string
	for _, w := range out.Warnings {
		warnings = append(warnings, w.Description)
	}
	return warnings, nil
}

// Ping is one controller's answer to ping/: its host, UP or DOWN, and primary.
type Ping struct {
	Hostname string `json:"hostname"`
	Pinged   string `json:"pinged"`
	Mode     string `json:"mode"`
}

// Ping asks the server whether it (and the cluster behind it) answers.
func (c *Client) Ping(ctx context.Context) ([]Ping, error) {
	var out struct {
		Pings []Ping `json:"pings"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/ping/", nil, nil, &out)
	return out.Pings, err
}
