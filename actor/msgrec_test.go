package actor

import (
	"testing"
	"time"
)

func TestMsgRecordEncoding(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 12, 0, 0, 5, time.UTC)
	tests := []struct {
		name    string
		v       []byte
		want    msgState
		wantRaw string
		wantErr bool
	}{
		{name: "visible", v: encodeMsg(msgState{}, []byte(`{"id":"msg_1"}`)), wantRaw: `{"id":"msg_1"}`},
		{name: "hidden", v: encodeMsg(msgState{visibleAt: at, attempts: 3}, []byte(`{}`)), want: msgState{visibleAt: at, attempts: 3}, wantRaw: `{}`},
		{name: "older version", v: []byte(`{"id":"msg_2"}`), wantRaw: `{"id":"msg_2"}`},
		{name: "short", v: []byte{msgRecVersion, 0, 0}, wantErr: true},
		{name: "unknown version", v: append([]byte{9}, make([]byte, msgHeaderLen)...), wantErr: true},
		{name: "empty", v: nil, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, raw, err := decodeMsgState(tt.v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if !st.visibleAt.Equal(tt.want.visibleAt) || st.attempts != tt.want.attempts || string(raw) != tt.wantRaw {
				t.Fatalf("got %+v %q, want %+v %q", st, raw, tt.want, tt.wantRaw)
			}
		})
	}
}

func TestMsgSeqOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		id   string
		seq  uint64
		want bool
	}{
		{"msg_1", 1, true}, {"msg_18446744073709551615", ^uint64(0), true},
		{"msg_0", 0, false}, {"msg_01", 0, false}, {"msg_", 0, false}, {"msg_x", 0, false},
		{"1", 0, false}, {"msg_+1", 0, false}, {"", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			seq, ok := msgSeqOf(tt.id)
			if ok != tt.want || (ok && seq != tt.seq) {
				t.Fatalf("msgSeqOf(%q) = %d, %v", tt.id, seq, ok)
			}
		})
	}
}
