package redisserver

import (
	"context"
	"fmt"
	"strings"
)

// Move is a hash slot on its way from one primary of a Cluster to the
// next, as redis-cli --cluster reshard moves it: begun (the slot
// IMPORTING on the target, MIGRATING on the owner), its keys migrated,
// then finished (SETSLOT NODE on every primary). While it moves, the
// owner answers ASK for a key it no longer holds, and either node
// answers TRYAGAIN for a command whose keys are split between them.
type Move struct {
	c             *Cluster
	ids           []string
	Slot          int
	Owner, Target int // indexes in Cluster.Nodes
}

// BeginMove marks slot as moving from the primary that holds it to the
// next one and moves no key.
func (c *Cluster) BeginMove(ctx context.Context, slot int) (*Move, error) {
	m := &Move{c: c, Slot: slot, ids: make([]string, len(c.Nodes))}
	for i, s := range c.Nodes {
		cl := s.Client()
		id, err := cl.Do(ctx, "CLUSTER", "MYID").Text()
		cl.Close()
		if err != nil {
			return nil, fmt.Errorf("redisserver: %w", err)
		}
		m.ids[i] = id
	}
	m.Owner = slot * len(c.Nodes) / 16384 // StartCluster splits the slots evenly, in order
	m.Target = (m.Owner + 1) % len(c.Nodes)
	if err := m.setSlot(ctx, m.Target, "IMPORTING", m.ids[m.Owner]); err != nil {
		return nil, err
	}
	if err := m.setSlot(ctx, m.Owner, "MIGRATING", m.ids[m.Target]); err != nil {
		return nil, err
	}
	return m, nil
}

// setSlot sends CLUSTER SETSLOT to the primary node.
func (m *Move) setSlot(ctx context.Context, node int, args ...any) error {
	cl := m.c.Nodes[node].Client()
	defer cl.Close()
	if err := cl.Do(ctx, append([]any{"CLUSTER", "SETSLOT", m.Slot}, args...)...).Err(); err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	return nil
}

// Migrate moves keys from the owner to the target, at once (MIGRATE …
// KEYS).
func (m *Move) Migrate(ctx context.Context, keys ...string) error {
	src := m.c.Nodes[m.Owner].Client()
	defer src.Close()
	host, port, _ := strings.Cut(m.c.Nodes[m.Target].Addr, ":")
	args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	if err := src.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("redisserver: %w", err)
	}
	return nil
}

// MigrateAll moves every key of the slot that the owner holds.
func (m *Move) MigrateAll(ctx context.Context) error {
	src := m.c.Nodes[m.Owner].Client()
	defer src.Close()
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, m.Slot, 100).Result()
		if err != nil {
			return fmt.Errorf("redisserver: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		if err := m.Migrate(ctx, keys...); err != nil {
			return err
		}
	}
}

// Finish gives the slot to the target on every primary: the target
// first, then the owner, as redis-cli does — the other way round, the
// owner answers MOVED to a node that answers MOVED back until it is told.
func (m *Move) Finish(ctx context.Context) error {
	order := []int{m.Target, m.Owner}
	for i := range m.c.Nodes {
		if i != m.Target && i != m.Owner {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if err := m.setSlot(ctx, i, "NODE", m.ids[m.Target]); err != nil {
			return err
		}
	}
	return nil
}

// MoveSlot moves slot and every key in it from the primary that holds it
// to the next one, and returns the new owner's index.
func (c *Cluster) MoveSlot(ctx context.Context, slot int) (int, error) {
	m, err := c.BeginMove(ctx, slot)
	if err == nil {
		err = m.MigrateAll(ctx)
	}
	if err == nil {
		err = m.Finish(ctx)
	}
	if err != nil {
		return 0, err
	}
	return m.Target, nil
}
