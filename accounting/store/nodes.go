package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// UpsertNode writes a node's capacity; see accounting.Store.
func (s *SQLStore) UpsertNode(ctx context.Context, n accounting.Node) error {
	if n.Name == "" || n.Added.IsZero() {
		return fmt.Errorf("node: name and added time are required")
	}
	if !n.Removed.IsZero() && n.Removed.Before(n.Added) {
		return fmt.Errorf("node %s: removed before added", n.Name)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO nodes (name, cpus, mem_mb, gpus, gpu_mem_mb, added, removed, partition_name)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET cpus = excluded.cpus, mem_mb = excluded.mem_mb, gpus = excluded.gpus,
		gpu_mem_mb = excluded.gpu_mem_mb, added = excluded.added, removed = excluded.removed, partition_name = excluded.partition_name`),
		n.Name, n.TRES.CPUs, n.TRES.MemMB, n.TRES.GPUs, n.TRES.GPUMemMB, unix(n.Added), unix(n.Removed), n.Partition)
	return err
}

// Nodes returns every node ever recorded, by name.
func (s *SQLStore) Nodes(ctx context.Context) ([]accounting.Node, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, cpus, mem_mb, gpus, gpu_mem_mb, added, removed, partition_name FROM nodes ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.Node
	for rows.Next() {
		var n accounting.Node
		var added, removed int64
		if err := rows.Scan(&n.Name, &n.TRES.CPUs, &n.TRES.MemMB, &n.TRES.GPUs, &n.TRES.GPUMemMB, &added, &removed, &n.Partition); err != nil {
			return nil, err
		}
		n.Added, n.Removed = fromUnix(added), fromUnix(removed)
		n.TRES.Nodes = 1
		out = append(out, n)
	}
	return out, rows.Err()
}

// RecordNodeDown writes a down interval; see accounting.Store.
func (s *SQLStore) RecordNodeDown(ctx context.Context, d accounting.NodeDown) error {
	if err := d.Validate(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO node_downs (node, start_time, end_time, reason, cpus, mem_mb, gpus, gpu_mem_mb)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (node, start_time) DO UPDATE SET end_time = excluded.end_time, reason = excluded.reason,
		cpus = excluded.cpus, mem_mb = excluded.mem_mb, gpus = excluded.gpus, gpu_mem_mb = excluded.gpu_mem_mb`),
		d.Node, unix(d.Start), unix(d.End), d.Reason, d.TRES.CPUs, d.TRES.MemMB, d.TRES.GPUs, d.TRES.GPUMemMB)
	return err
}

// NodeDowns returns down intervals overlapping [from, to), by node and start.
func (s *SQLStore) NodeDowns(ctx context.Context, from, to time.Time) ([]accounting.NodeDown, error) {
	w := overlapping("start_time", "end_time", from, to)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT node, start_time, end_time, reason, cpus, mem_mb, gpus, gpu_mem_mb
		FROM node_downs`+w.String()+` ORDER BY node, start_time`), w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.NodeDown
	for rows.Next() {
		var d accounting.NodeDown
		var start, end int64
		if err := rows.Scan(&d.Node, &start, &end, &d.Reason, &d.TRES.CPUs, &d.TRES.MemMB, &d.TRES.GPUs, &d.TRES.GPUMemMB); err != nil {
			return nil, err
		}
		d.Start, d.End = fromUnix(start), fromUnix(end)
		out = append(out, d)
	}
	return out, rows.Err()
}

// RecordValidation writes a validation run; see accounting.Store.
func (s *SQLStore) RecordValidation(ctx context.Context, v accounting.NodeValidation) error {
	if err := v.Validate(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO node_validations (node, start_time, end_time, partition_name, kind, result, detail)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (node, start_time) DO UPDATE SET end_time = excluded.end_time, partition_name = excluded.partition_name,
		kind = excluded.kind, result = excluded.result, detail = excluded.detail`),
		v.Node, unix(v.Start), unix(v.End), v.Partition, v.Kind, v.Result, v.Detail)
	return err
}

// NodeValidations returns validation runs started within [from, to) (a zero bound is
// open), by node and start.
func (s *SQLStore) NodeValidations(ctx context.Context, from, to time.Time) ([]accounting.NodeValidation, error) {
	query, args := `SELECT node, start_time, end_time, partition_name, kind, result, detail FROM node_validations WHERE 1=1`, []any{}
	if !from.IsZero() {
		query, args = query+` AND start_time >= ?`, append(args, unix(from))
	}
	if !to.IsZero() {
		query, args = query+` AND start_time < ?`, append(args, unix(to))
	}
	rows, err := s.db.QueryContext(ctx, s.q(query+` ORDER BY node, start_time`), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.NodeValidation
	for rows.Next() {
		var v accounting.NodeValidation
		var start, end int64
		if err := rows.Scan(&v.Node, &start, &end, &v.Partition, &v.Kind, &v.Result, &v.Detail); err != nil {
			return nil, err
		}
		v.Start, v.End = fromUnix(start), fromUnix(end)
		out = append(out, v)
	}
	return out, rows.Err()
}
