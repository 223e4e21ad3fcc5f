package linearize

import "testing"

func TestRegisterModel(t *testing.T) {
	t.Parallel()
	runHistories(t, "env/sb/s/X", []historyCase{
		{"initially empty", []hop{
			{GetVar{}, 0, 1, Got{""}},
		}, true},
		{"set then get", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{GetVar{}, 2, 3, Got{"a"}},
		}, true},
		{"a get concurrent with a set sees either value", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{SetVar{"b"}, 2, 10, nil},
			{GetVar{}, 3, 4, Got{"a"}},
			{GetVar{}, 5, 6, Got{"b"}},
		}, true},
		{"a set with an unknown outcome may not happen", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{SetVar{"b"}, 2, unk, nil},
			{GetVar{}, 5, 6, Got{"a"}},
		}, true},
		{"a set with an unknown outcome may happen late", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{SetVar{"b"}, 2, unk, nil},
			{GetVar{}, 5, 6, Got{"a"}},
			{GetVar{}, 7, 8, Got{"b"}},
		}, true},
		{"an acknowledged set is lost", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{GetVar{}, 2, 3, Got{""}},
		}, false},
		{"a get goes back in time", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{SetVar{"b"}, 2, 3, nil},
			{GetVar{}, 4, 5, Got{"b"}},
			{GetVar{}, 6, 7, Got{"a"}},
		}, false},
		{"a value nobody set", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{GetVar{}, 2, 3, Got{"z"}},
		}, false},
		{"an unknown set seen, then undone", []hop{
			{SetVar{"a"}, 0, 1, nil},
			{SetVar{"b"}, 2, unk, nil},
			{GetVar{}, 5, 6, Got{"b"}},
			{GetVar{}, 7, 8, Got{"a"}},
		}, false},
	})
}
