import HTTPCore
