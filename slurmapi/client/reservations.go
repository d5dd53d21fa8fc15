package client

import (
	"context"
	"fmt"
	"net/url"
)

// Reservation is what scontrol show reservation and sinfo -T show of an advance
// reservation (v0.0.44 reservation_info).
type Reservation struct {
	Name      string   `json:"name"`
	StartTime NoVal    `json:"start_time"`
	EndTime   NoVal    `json:"end_time"`
	NodeList  string   `json:"node_list"`
	NodeCount int64    `json:"node_count"`
	CoreCount int64    `json:"core_count"`
	Partition string   `json:"partition"`
	Flags     []string `json:"flags"`
	TRES      string   `json:"tres"`
	Users     string   `json:"users"`
	Accounts  string   `json:"accounts"`
	Groups    string   `json:"groups"`
	Licenses  string   `json:"licenses"`
	Features  string   `json:"features"`
}

// Reservations lists the advance reservations.
func (c *Client) Reservations(ctx context.Context) ([]Reservation, error) {
	var out struct {
		Reservations []Reservation `json:"reservations"`
	}
	err := c.do(ctx, "GET", "/slurm/"+Version+"/reservations/", nil, nil, &out)
	return out.Reservations, err
}

// Reservation reads one reservation; IsNotFound(err) when there is none of that name.
func (c *Client) Reservation(ctx context.Context, name string) (Reservation, error) {
	var out struct {
		Reservations []Reservation `json:"reservations"`
	}
	if err := c.do(ctx, "GET", "/slurm/"+Version+"/reservation/"+url.PathEscape(name), nil, nil, &out); err != nil {
		return Reservation{}, err
	}
	if len(out.Reservations) == 0 {
		return Reservation{}, fmt.Errorf("reservation %s not found", name)
	}
	return out.Reservations[0], nil
}

// PostReservation creates a reservation or, when its name exists, changes it (POST
// reservation with a reservation_desc_msg), as scontrol create and update reservation do.
func (c *Client) PostReservation(ctx context.Context, desc map[string]any) error {
	return c.do(ctx, "POST", "/slurm/"+Version+"/reservation", nil, desc, nil)
}

// DeleteReservation deletes a reservation; IsNotFound(err) when there is none.
func (c *Client) DeleteReservation(ctx context.Context, name string) error {
	return c.do(ctx, "DELETE", "/slurm/"+Version+"/reservation/"+url.PathEscape(name), nil, nil, nil)
}
