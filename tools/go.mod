module quarters.dev/tools

go 1.26.0
