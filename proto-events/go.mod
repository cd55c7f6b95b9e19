module quarters.dev/proto-events

go 1.26.0
