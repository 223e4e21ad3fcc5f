package linearize

import (
	"testing"
	"time"
)

func msg(id, data string, attempts int) Msg { return Msg{ID: id, Data: data, Attempts: attempts} }

func taken(ms ...Msg) Taken { return Taken{Messages: ms} }

func TestQueueModel(t *testing.T) {
	t.Parallel()
	take := Take{Max: 10, Visibility: time.Second} // visible again 1000 ms after the take
	runHistories(t, "queue/sb", []historyCase{
		{"post, take, ack", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{Ack{[]string{"msg_1"}}, 4, 5, Acked{1}},
			{take, 2000, 2001, taken()},
		}, true},
		{"an unacknowledged message comes back after its visibility", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{take, 10, 11, taken()},
			{take, 2000, 2001, taken(msg("msg_1", "a", 2))},
		}, true},
		{"an unacknowledged message may not come back yet near its deadline", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 500, taken(msg("msg_1", "a", 1))},
			{take, 1100, 1101, taken()},
		}, true},
		{"a take concurrent with a post may miss it", []hop{
			{Post{"a"}, 0, 10, Posted{"msg_1"}},
			{take, 1, 2, taken()},
		}, true},
		{"a post with an unknown outcome may show up", []hop{
			{Post{"a"}, 0, unk, nil},
			{Post{"b"}, 1, 2, Posted{"msg_2"}},
			{take, 5, 6, taken(msg("msg_1", "a", 1), msg("msg_2", "b", 1))},
		}, true},
		{"a post with an unknown outcome may never show up", []hop{
			{Post{"a"}, 0, unk, nil},
			{take, 5, 6, taken()},
		}, true},
		{"a take with an unknown outcome may have hidden a message", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, unk, nil},
			{take, 10, 11, taken()},
			{take, 2000, 2001, taken(msg("msg_1", "a", 3))},
		}, true},
		{"an ack with an unknown outcome may have removed a message", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{Ack{[]string{"msg_1"}}, 4, unk, nil},
			{take, 2000, 2001, taken()},
		}, true},
		{"an ack with an unknown outcome may not have removed it", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{Ack{[]string{"msg_1"}}, 4, unk, nil},
			{take, 2000, 2001, taken(msg("msg_1", "a", 2))},
		}, true},
		{"a take of one returns the oldest", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Post{"b"}, 2, 3, Posted{"msg_2"}},
			{Take{Max: 1, Visibility: time.Second}, 4, 5, taken(msg("msg_1", "a", 1))},
			{take, 6, 7, taken(msg("msg_2", "b", 1))},
		}, true},
		{"a batch ack counts what it removed", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Post{"b"}, 2, 3, Posted{"msg_2"}},
			{Ack{[]string{"msg_1"}}, 4, 5, Acked{1}},
			{Ack{[]string{"msg_1", "msg_2", "msg_9"}}, 6, 7, Acked{1}},
		}, true},
		{"an acknowledged message comes back", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{Ack{[]string{"msg_1"}}, 4, 5, Acked{1}},
			{take, 2000, 2001, taken(msg("msg_1", "a", 2))},
		}, false},
		{"an acknowledged post is lost", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken()},
		}, false},
		{"a taken message is lost after its visibility", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{take, 2000, 2001, taken()},
		}, false},
		{"a message comes back before its visibility passed", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{take, 100, 101, taken(msg("msg_1", "a", 2))},
		}, false},
		{"out of post order", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Post{"b"}, 2, 3, Posted{"msg_2"}},
			{take, 4, 5, taken(msg("msg_2", "b", 1), msg("msg_1", "a", 1))},
		}, false},
		{"an older visible message is skipped", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Post{"b"}, 2, 3, Posted{"msg_2"}},
			{Take{Max: 1, Visibility: time.Second}, 4, 5, taken(msg("msg_2", "b", 1))},
		}, false},
		{"attempts go back", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1))},
			{take, 2000, 2001, taken(msg("msg_1", "a", 2))},
			{take, 4000, 4001, taken(msg("msg_1", "a", 2))},
		}, false},
		{"a present message is not found by its ack", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Ack{[]string{"msg_1"}}, 2, 3, Acked{0}},
		}, false},
		{"a message is removed twice", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Ack{[]string{"msg_1"}}, 2, 3, Acked{1}},
			{Ack{[]string{"msg_1"}}, 4, 5, Acked{1}},
		}, false},
		{"a message nobody posted", []hop{
			{take, 0, 1, taken(msg("msg_9", "ghost", 1))},
		}, false},
		{"an id given twice", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{Post{"b"}, 2, 3, Posted{"msg_1"}},
		}, false},
		{"a message's data changes", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "z", 1))},
		}, false},
		{"one take returns a message twice", []hop{
			{Post{"a"}, 0, 1, Posted{"msg_1"}},
			{take, 2, 3, taken(msg("msg_1", "a", 1), msg("msg_1", "a", 1))},
		}, false},
	})
}
