module quarters.dev/services/auth

go 1.26.0
