package definition_test

import "fmt"

func fmtV(v any) string  { return fmt.Sprintf("%v %+v", v, v) }
func fmtGo(v any) string { return fmt.Sprintf("%#v", v) }
