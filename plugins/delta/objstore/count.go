package objstore

import (
	"context"
	"sync/atomic"

	"github.com/picomq/heavy-sinks/plugins/delta/deltalog"
)

// Requests counts the operations stores make, by kind: what a table costs
// in round trips (and, on a cloud store, in request charges). One
// operation is one request, except that a listing longer than a page
// takes one per page and a client library's own retries are not seen.
// The sink issues no HEAD requests.
type Requests struct {
	Get, Put, List, Delete atomic.Int64
}

// Counted returns s with every operation counted in r.
func Counted(s Store, r *Requests) Store { return &counted{Store: s, r: r} }

type counted struct {
	Store
	r *Requests
}

func (c *counted) Get(ctx context.Context, p string) ([]byte, error) {
	c.r.Get.Add(1)
	return c.Store.Get(ctx, p)
}

func (c *counted) GetRange(ctx context.Context, p string, offset, length int64) ([]byte, error) {
	c.r.Get.Add(1)
	return c.Store.GetRange(ctx, p, offset, length)
}

func (c *counted) Put(ctx context.Context, p string, data []byte) error {
	c.r.Put.Add(1)
	return c.Store.Put(ctx, p, data)
}

func (c *counted) PutIfAbsent(ctx context.Context, p string, data []byte) error {
	c.r.Put.Add(1)
	return c.Store.PutIfAbsent(ctx, p, data)
}

func (c *counted) List(ctx context.Context, prefix, startAfter string) ([]deltalog.FileInfo, error) {
	c.r.List.Add(1)
	return c.Store.List(ctx, prefix, startAfter)
}

// Stat counts as the List it replaces: the inner store's Stat where it
// has one (a local stat), otherwise one listing.
func (c *counted) Stat(ctx context.Context, p string) (deltalog.FileInfo, bool, error) {
	c.r.List.Add(1)
	return deltalog.StatObject(ctx, c.Store, p)
}

func (c *counted) Delete(ctx context.Context, p string) error {
	c.r.Delete.Add(1)
	return c.Store.Delete(ctx, p)
}
