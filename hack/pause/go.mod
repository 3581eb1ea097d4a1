module tether.dev/hack/pause

go 1.26.0
