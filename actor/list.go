package actor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
)

// Listing sandboxes without holding them all.
//
// A node may hold a hundred thousand sandboxes, and the list of them is a response of
// about a kilobyte each. [Node.EachSandbox] hands them to its caller one at a time, so
// the gateway can write each to the client as it comes and never holds the list:
//
//  1. It reads the stored records in pages of listPage ids, each page in a storage
//     read of its own ([SandboxPager]), decoded and copied out before the read ends.
//  2. It then calls fn for each sandbox of the page, outside any read: a client that
//     takes its answer slowly holds no read of the store open. (A bbolt read held open
//     keeps writers from growing the file, so every sandbox's writes would wait.)
//  3. The next page starts after the last id of this one. A sandbox created or
//     deleted meanwhile is listed or not depending on where the walk is, as with any
//     list that is not one snapshot; none is listed twice, and the order is id order.
//
// A Storage without SandboxPager is walked in one read, with fn called inside it.

// listPage is how many sandboxes EachSandbox reads from storage at a time: about
// 256 KiB of records, few enough reads for a long list, little enough held at once.
const listPage = 256

// SandboxPager is an optional capability of a [Storage]: Storage.Sandboxes from a
// given id on, so that a long walk can be taken in pages, each in a read of its own.
// EachSandbox uses it when the Storage has it ([BoltStore] does).
type SandboxPager interface {
	// SandboxesAfter is Storage.Sandboxes for the sandboxes whose id sorts after after
	// ("": all of them).
	SandboxesAfter(ctx context.Context, key []byte, after string, fn func(id string, val []byte) error) error
}

var _ SandboxPager = (*BoltStore)(nil)

// EachSandbox calls fn, in id order, for each sandbox whose labels include every pair
// in labels, as ListSandboxes shows it: active sandboxes as of their last turn,
// passivated ones from storage. It never holds more than a page of them (listPage)
// and calls fn outside any storage read, so fn may take its time (write to a slow
// client). An error from fn ends the walk and is returned as it is. It does not
// activate anything.
func (n *Node) EachSandbox(ctx context.Context, labels map[string]string, fn func(SandboxInfo) error) error {
	pager, ok := n.store.(SandboxPager)
	if !ok {
		var fnErr error
		err := n.store.Sandboxes(ctx, keyMeta, func(id string, v []byte) error {
			in, ok, err := n.listedInfo(id, v, labels)
			if err != nil || !ok {
				return err
			}
			fnErr = fn(in)
			return fnErr
		})
		if fnErr != nil {
			return fnErr
		}
		return n.listErr(err)
	}
	after := ""
	page := make([]SandboxInfo, 0, listPage)
	for {
		page, read := page[:0], 0
		err := pager.SandboxesAfter(ctx, keyMeta, after, func(id string, v []byte) error {
			if read == listPage {
				return errPageFull
			}
			read++
			after = id
			in, ok, err := n.listedInfo(id, v, labels)
			if ok {
				page = append(page, in)
			}
			return err
		})
		if err != nil && !errors.Is(err, errPageFull) {
			return n.listErr(err)
		}
		for _, in := range page {
			if err := fn(in); err != nil {
				return err
			}
		}
		if err == nil { // the walk reached the end
			return nil
		}
	}
}

// listErr wraps an error of the storage walk of a list; fn's own errors pass as they
// are (the walk returns them unchanged).
func (n *Node) listErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("actor: failed to list sandboxes: %w", err)
}

// listedInfo is sandbox id as a list shows it, from its active actor or its stored
// record v; ok is false when it has no record or its labels do not match.
func (n *Node) listedInfo(id string, v []byte, labels map[string]string) (in SandboxInfo, ok bool, err error) {
	if v == nil {
		return SandboxInfo{}, false, nil
	}
	if a := n.active(id); a != nil && a.info.Load() != nil {
		in = *a.info.Load()
		in.Labels, in.Pool = maps.Clone(in.Labels), maps.Clone(in.Pool)
	} else {
		var r sandboxRec
		if err := json.Unmarshal(v, &r); err != nil {
			return SandboxInfo{}, false, fmt.Errorf("decode sandbox %q: %w", id, err)
		}
		in = infoFromRec(n, &r)
	}
	return in, hasLabels(in.Labels, labels), nil
}

// EachTenantSandbox is EachSandbox for the sandboxes of one tenant: it reads only
// theirs, found in the owner index (one storage read per passivated sandbox), so a
// tenant with a few sandboxes on a node with many gets its list without every record
// being decoded. fn is called outside any storage read.
func (n *Node) EachTenantSandbox(ctx context.Context, tenant string, labels map[string]string, fn func(SandboxInfo) error) error {
	for _, id := range n.owners.ids(tenant) {
		var in SandboxInfo
		found := false
		if a := n.active(id); a != nil && a.info.Load() != nil {
			in, found = *a.info.Load(), true
			in.Labels, in.Pool = maps.Clone(in.Labels), maps.Clone(in.Pool)
		} else {
			err := n.store.Read(ctx, id, func(r Reader) error {
				var err error
				in, found, err = n.listedInfo(id, r.Get(keyMeta), nil)
				return err
			})
			if err != nil {
				return n.listErr(err)
			}
		}
		if found && hasLabels(in.Labels, labels) {
			if err := fn(in); err != nil {
				return err
			}
		}
	}
	return nil
}
