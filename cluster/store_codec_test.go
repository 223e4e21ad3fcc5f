package cluster

import (
	"bytes"
	"fmt"
	"testing"
)

func codecSamples() [][]*Batch {
	return [][]*Batch{
		nil,
		{put("a", "k", "v")},
		{wipe("a"), del("b", "x", "y"), put("c", "", "", "k", "")},
		{{Sandbox: "e", Epoch: 1 << 40, Ops: []Op{{Key: []byte{0, 0xff}, Value: bytes.Repeat([]byte("x"), 300)}}}},
	}
}

// TestBatchesType: a group holding a batch that deletes its sandbox outright is
// logged as cmdBatchesDrop, any other as cmdBatches.
func TestBatchesType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		bs   []*Batch
		want cmdType
	}{
		{"puts", []*Batch{put("a", "k", "v")}, cmdBatches},
		{"a delete", []*Batch{put("a", "k", "v"), wipe("b")}, cmdBatchesDrop},
		{"a delete with puts", []*Batch{{Sandbox: "a", DeleteSandbox: true, Ops: []Op{{Key: []byte("k")}}}}, cmdBatches},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cmdType(encodeBatches(tt.bs)[0]); got != tt.want {
				t.Fatalf("type %#x, want %#x", got, tt.want)
			}
		})
	}
}

func TestBatchCodec(t *testing.T) {
	t.Parallel()
	for i, bs := range codecSamples() {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			data := encodeBatches(bs)
			if cmdType(data[0]) != batchesType(bs) || !isBatches(cmdType(data[0])) {
				t.Fatalf("type %#x", data[0])
			}
			d := decoder{b: data[1:]}
			got := d.batches()
			if err := d.done(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(encodeBatches(got), data) {
				t.Fatalf("round trip: %+v, want %+v", got, bs)
			}
			for j := range got {
				if got[j].Sandbox != bs[j].Sandbox || got[j].Epoch != bs[j].Epoch || got[j].DeleteSandbox != bs[j].DeleteSandbox || len(got[j].Ops) != len(bs[j].Ops) {
					t.Fatalf("batch %d: %+v, want %+v", j, got[j], bs[j])
				}
			}
			for cut := 1; cut < len(data)-1; cut++ { // every truncation fails cleanly
				d := decoder{b: data[1:cut]}
				d.batches()
				if d.done() == nil && cut < len(data) {
					t.Fatalf("truncated at %d of %d decoded", cut, len(data))
				}
			}
		})
	}
}

func FuzzDecodeBatches(f *testing.F) {
	for _, bs := range codecSamples() {
		f.Add(encodeBatches(bs)[1:])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d := decoder{b: b}
		bs := d.batches()
		if d.done() != nil {
			return
		}
		enc := encodeBatches(bs)[1:]
		d2 := decoder{b: enc}
		if bs2 := d2.batches(); d2.done() != nil || !bytes.Equal(encodeBatches(bs2)[1:], enc) {
			t.Fatal("canonical encoding is not stable")
		}
	})
}
