package linearize

import "testing"

func ev(seq uint64, data string) Event { return Event{Seq: seq, Type: "agent.t", Data: data} }

func sev(seq uint64, typ string) Event { return Event{Seq: seq, Type: typ, Data: "{}"} }

func app(data string) Append { return Append{Type: "agent.t", Data: data} }

func read(evs ...Event) LogRead { return LogRead{Events: evs} }

func TestEventLogModel(t *testing.T) {
	t.Parallel()
	all := ReadLog{Since: 0, Limit: 100}
	runHistories(t, "events/sb", []historyCase{
		{"append then complete read", []hop{
			{app("x"), 0, 1, Appended{1}},
			{all, 2, 3, read(ev(1, "x"))},
		}, true},
		{"server entries between appends", []hop{
			{app("x"), 0, 1, Appended{2}},
			{all, 2, 3, read(sev(1, "sandbox.created"), ev(2, "x"))},
			{app("y"), 4, 5, Appended{4}},
			{ReadLog{Since: 2, Limit: 100}, 6, 7, read(sev(3, "sandbox.moved"), ev(4, "y"))},
		}, true},
		{"a read concurrent with an append may miss it", []hop{
			{app("x"), 0, 10, Appended{1}},
			{all, 1, 2, read()},
			{all, 11, 12, read(ev(1, "x"))},
		}, true},
		{"an append with an unknown outcome may show up", []hop{
			{app("x"), 0, unk, nil},
			{all, 5, 6, read(ev(1, "x"))},
			{all, 7, 8, read(ev(1, "x"))},
		}, true},
		{"an append with an unknown outcome may never show up", []hop{
			{app("x"), 0, unk, nil},
			{all, 5, 6, read()},
			{app("y"), 7, 8, Appended{1}},
		}, true},
		{"a read that hit its limit need not reach the newest", []hop{
			{app("x"), 0, 1, Appended{1}},
			{app("y"), 2, 3, Appended{2}},
			{ReadLog{Limit: 1}, 4, 5, read(ev(1, "x"))},
		}, true},
		{"a stream prefix claims nothing beyond what it shows", []hop{
			{app("x"), 0, 1, Appended{1}},
			{app("y"), 2, 3, Appended{2}},
			{ReadLog{}, 1, 9, read(ev(1, "x"))},
		}, true},
		{"a log that starts late (a re-created sandbox)", []hop{
			{all, 0, 1, read(sev(50, "sandbox.created"))},
			{app("x"), 2, 3, Appended{51}},
			{all, 4, 5, read(sev(50, "sandbox.created"), ev(51, "x"))},
		}, true},
		{"an acknowledged append disappears", []hop{
			{app("x"), 0, 1, Appended{1}},
			{all, 2, 3, read()},
		}, false},
		{"a read goes back in time", []hop{
			{app("x"), 0, 1, Appended{1}},
			{app("y"), 0, 1, Appended{2}},
			{all, 4, 5, read(ev(1, "x"), ev(2, "y"))},
			{all, 6, 7, read(ev(1, "x"))},
		}, false},
		{"an entry changes", []hop{
			{all, 0, 1, read(sev(1, "sandbox.created"))},
			{all, 2, 3, read(sev(1, "sandbox.moved"))},
		}, false},
		{"a seq is given twice", []hop{
			{app("x"), 0, 1, Appended{1}},
			{app("y"), 2, 3, Appended{1}},
		}, false},
		{"seqs go back", []hop{
			{app("x"), 0, 1, Appended{5}},
			{app("y"), 2, 3, Appended{3}},
		}, false},
		{"an entry is read before its append was called", []hop{
			{all, 0, 1, read(ev(1, "x"))},
			{app("x"), 2, 3, Appended{1}},
		}, false},
		{"an unknown append shows up, then is gone", []hop{
			{app("x"), 0, unk, nil},
			{all, 5, 6, read(ev(1, "x"))},
			{all, 7, 8, read()},
		}, false},
		{"a gap in a read", []hop{
			{all, 0, 1, read(sev(1, "sandbox.created"), sev(3, "sandbox.moved"))},
		}, false},
		{"the start of the log is lost", []hop{
			{app("x"), 0, 1, Appended{1}},
			{app("y"), 2, 3, Appended{2}},
			{all, 4, 5, read(ev(2, "y"))},
		}, false},
		{"one append shows up twice", []hop{
			{app("x"), 0, 1, Appended{1}},
			{all, 2, 3, read(ev(1, "x"), ev(2, "x"))},
		}, false},
		{"the read's since is not respected", []hop{
			{app("x"), 0, 1, Appended{1}},
			{ReadLog{Since: 1, Limit: 10}, 2, 3, read(ev(1, "x"))},
		}, false},
	})
}
