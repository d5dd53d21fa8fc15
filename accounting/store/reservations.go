package store

import (
	"context"
	"strings"
	"time"

	"github.com/sluicehq/sluice/accounting"
)

// RecordReservation writes a reservation window; see accounting.Store.
func (s *SQLStore) RecordReservation(ctx context.Context, r accounting.Reservation) error {
	if err := r.Validate(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO reservations (name, start_time, end_time, nodes, flags, accounts,
		users, cpus, mem_mb, gpus, gpu_mem_mb, node_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (name, start_time) DO UPDATE SET end_time = excluded.end_time, nodes = excluded.nodes,
		flags = excluded.flags, accounts = excluded.accounts, users = excluded.users, cpus = excluded.cpus,
		mem_mb = excluded.mem_mb, gpus = excluded.gpus, gpu_mem_mb = excluded.gpu_mem_mb,
		node_count = excluded.node_count`),
		r.Name, unix(r.Start), unix(r.End), r.Nodes, strings.Join(r.Flags, ","), strings.Join(r.Accounts, ","),
		strings.Join(r.Users, ","), r.TRES.CPUs, r.TRES.MemMB, r.TRES.GPUs, r.TRES.GPUMemMB, r.TRES.Nodes)
	return err
}

// ForgetReservation removes a window; see accounting.Store.
func (s *SQLStore) ForgetReservation(ctx context.Context, name string, start time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`DELETE FROM reservations WHERE name = ? AND start_time = ?`), name, unix(start))
	return err
}

// Reservations returns the windows overlapping [from, to); see accounting.Store.
func (s *SQLStore) Reservations(ctx context.Context, from, to time.Time) ([]accounting.Reservation, error) {
	w := overlapping("start_time", "end_time", from, to)
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT name, start_time, end_time, nodes, flags, accounts, users,
		cpus, mem_mb, gpus, gpu_mem_mb, node_count FROM reservations`+w.String()+` ORDER BY name, start_time`), w.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []accounting.Reservation
	for rows.Next() {
		var r accounting.Reservation
		var start, end int64
		var flags, accounts, users string
		t := &r.TRES
		if err := rows.Scan(&r.Name, &start, &end, &r.Nodes, &flags, &accounts, &users,
			&t.CPUs, &t.MemMB, &t.GPUs, &t.GPUMemMB, &t.Nodes); err != nil {
			return nil, err
		}
		r.Start, r.End = fromUnix(start), fromUnix(end)
		r.Flags, r.Accounts, r.Users = splitList(flags), splitList(accounts), splitList(users)
		out = append(out, r)
	}
	return out, rows.Err()
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
