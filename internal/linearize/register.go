package linearize

import (
	"strconv"

	"github.com/anishathalye/porcupine"
)

// SetVar sets a register, such as a session's variable set with `export X=v`. Its
// output is nil (Return(nil)) once the set is known to have happened.
type SetVar struct {
	Value string
}

// GetVar reads a register, such as a session's variable printed with `echo "$X"`.
// Its output is Got.
type GetVar struct{}

// Got is the output of GetVar: the value read.
type Got struct {
	Value string
}

func (SetVar) model() modelKind      { return kindRegister }
func (SetVar) outputOK(out any) bool { return out == nil }
func (SetVar) read() bool            { return false }
func (GetVar) model() modelKind      { return kindRegister }
func (GetVar) outputOK(out any) bool { _, ok := out.(Got); return ok }
func (GetVar) read() bool            { return true }

// String describes the set for porcupine's visualization.
func (s SetVar) String() string { return "set(" + strconv.Quote(s.Value) + ")" }

// String describes the get for porcupine's visualization.
func (GetVar) String() string { return "get()" }

// String describes the value read for porcupine's visualization.
func (g Got) String() string { return strconv.Quote(g.Value) }

// registerModel is a string register, initially "". A set with an unknown outcome
// leaves either value, so the model is nondeterministic: its state is the set of
// values the register may hold.
func registerModel() porcupine.Model {
	m := porcupine.NondeterministicModel{
		Init: func() []any { return []any{""} },
		Step: func(state, input, output any) []any {
			v := state.(string)
			_, in := stampOf(input)
			out := output.(retOut)
			switch in := in.(type) {
			case SetVar:
				if out.unknown {
					return []any{v, in.Value}
				}
				return []any{in.Value}
			case GetVar:
				if out.out.(Got).Value == v {
					return []any{v}
				}
			}
			return nil
		},
		DescribeOperation: describe,
		DescribeState:     func(s any) string { return strconv.Quote(s.(string)) },
	}
	return m.ToModel()
}
