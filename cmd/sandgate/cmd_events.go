package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sandgate/sandgate/sdk"
)

func cmdEvents(ctx context.Context, e *env, args []string) int {
	f := newFlags(e, "events", `[flags] SANDBOX

Prints the event log of SANDBOX, oldest first: one line per event with its seq,
time, type and data. With -f it then follows new events until interrupted,
resuming after the last seq printed if the connection drops. With --output json
each event is one JSON object per line ({"seq","type","at","data"}), for jq.`)
	follow := f.Bool("f", false, "follow new events until interrupted")
	since := f.Int64("since", 0, "only events with a seq above this")
	out := f.addOutput()
	pos, code, ok := f.parse(e, args, 1, 1)
	if !ok {
		return code
	}
	asJSON, code, ok := out.check(f, e)
	if !ok {
		return code
	}
	c, sb := f.client(e), pos[0]
	enc := json.NewEncoder(e.stdout)
	print := func(ev sdk.Event) error {
		if asJSON {
			return enc.Encode(ev)
		}
		data := string(ev.Data)
		if data == "" {
			data = "-"
		}
		_, err := fmt.Fprintf(e.stdout, "%d\t%s\t%s\t%s\n", ev.Seq, ev.At.UTC().Format(time.RFC3339Nano), ev.Type, data)
		return err
	}
	if *follow {
		for ev, err := range c.StreamEvents(ctx, sb, *since) {
			if err == nil {
				err = print(ev)
			}
			if err != nil {
				return f.fail(ctx, e, err)
			}
		}
		return 0
	}
	last := *since
	for {
		page, err := c.ListEvents(ctx, sb, &sdk.ListEventsOptions{Since: last})
		if err != nil {
			return f.fail(ctx, e, err)
		}
		if len(page) == 0 {
			return 0
		}
		for _, ev := range page {
			if err := print(ev); err != nil {
				return f.fail(ctx, e, err)
			}
			last = max(last, ev.Seq)
		}
	}
}
