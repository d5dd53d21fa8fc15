package slurmapi

import "strings"

func handleNodes(s *Server, c *call) (map[string]any, error) {
	nodes, err := s.backend.Nodes(c.ctx)
	if err != nil {
		return nil, err
	}
	return renderNodes(nodes, s.cfg.ClusterName, c.now), nil
}

func handleNode(s *Server, c *call) (map[string]any, error) {
	nodes, err := s.backend.Nodes(c.ctx)
	if err != nil {
		return nil, err
	}
	name := c.vars["node_name"]
	for i := range nodes {
		if nodes[i].Name == name {
			return renderNodes(nodes[i:i+1], s.cfg.ClusterName, c.now), nil
		}
	}
	return nil, NotFound(ErrInvalidNodeName, "node_name", "node %q does not exist", name)
}

func handlePartitions(s *Server, c *call) (map[string]any, error) {
	parts, err := s.backend.Partitions(c.ctx)
	if err != nil {
		return nil, err
	}
	return renderPartitions(parts, s.cfg.ClusterName, c.now), nil
}

func handlePartition(s *Server, c *call) (map[string]any, error) {
	parts, err := s.backend.Partitions(c.ctx)
	if err != nil {
		return nil, err
	}
	name := c.vars["partition_name"]
	for i := range parts {
		if parts[i].Name == name {
			return renderPartitions(parts[i:i+1], s.cfg.ClusterName, c.now), nil
		}
	}
	return nil, NotFound(ErrInvalidPartition, "partition_name", "partition %q does not exist", name)
}

// handleShares is sshare; accounts and users query parameters are
// comma-separated filters. The caller gets the rows it may see (PrivateData=usage).
func handleShares(s *Server, c *call) (map[string]any, error) {
	q := c.r.URL.Query()
	shares, err := s.backend.Shares(c.ctx, csv(q.Get("accounts")), csv(q.Get("users")))
	if err != nil {
		return nil, err
	}
	for i := range shares {
		if shares[i].Cluster == "" { // the ledger knows no cluster; the server's name is it
			shares[i].Cluster = s.cfg.ClusterName
		}
	}
	return renderShares(c.id.visibleShares(shares)), nil
}

func csv(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
