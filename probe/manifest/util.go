package manifest

import (
	"encoding/json"
	"errors"
)

func asSyntax(err error, se **json.SyntaxError) bool { return errors.As(err, se) }
