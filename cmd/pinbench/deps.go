package main
import (
 _ "gonum.org/v1/plot"
 _ "gonum.org/v1/plot/vg"
 _ "gonum.org/v1/plot/plotter"
 _ "github.com/redis/go-redis/v9"
 _ "golang.org/x/time/rate"
)
func main() {}
