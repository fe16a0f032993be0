// Package choices words a list of choices as a user reads it in a usage
// line or an error: "fixed, sliding, log or gcra".
package choices

import (
	"fmt"
	"strings"
)

// Or joins xs as "a, b or c", each as fmt prints it.
func Or[T any](xs []T) string {
	var b strings.Builder
	for i, x := range xs {
		switch {
		case i == len(xs)-1 && i > 0:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}
