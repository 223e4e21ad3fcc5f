package linearize_test

import (
	"errors"
	"fmt"

	"github.com/sandgate/sandgate/internal/linearize"
)

func Example() {
	r := linearize.NewRecorder(nil)
	// A client sets a session variable, and another reads it afterwards.
	set := r.Call("env/sb1/s1/X", linearize.SetVar{Value: "v1"})
	set.Return(nil)
	get := r.Call("env/sb1/s1/X", linearize.GetVar{})
	get.Return(linearize.Got{Value: ""}) // the acknowledged set was lost
	err := r.Check(nil)
	fmt.Println(errors.Is(err, linearize.ErrNotLinearizable))
	// Output: true
}
