// 2:4 sparse FP8 host code — in progress
