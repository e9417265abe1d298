//! DSCP marking on the wire: a data socket made for a test with `--dscp EF`
//! sends datagrams whose IP header carries TOS 0xb8, as a receiver with
//! IP_RECVTOS reads it from the packet (not from the sender's socket).

use linkperf_proto::{Protocol, TestConfig};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;

/// Receives one datagram and returns the TOS byte of its IP header.
fn received_tos(rx: &UdpSocket) -> Option<u8> {
    let on: libc::c_int = 1;
    // SAFETY: valid pointers for the calls' duration; buffers outlive recvmsg.
    unsafe {
        libc::setsockopt(
            rx.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_RECVTOS,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let mut data = [0u8; 2048];
        let mut control = [0u64; 8];
        let mut iov = libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control) as _;
        if libc::recvmsg(rx.as_raw_fd(), &mut msg, 0) < 0 {
            return None;
        }
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::IPPROTO_IP && (*c).cmsg_type == libc::IP_TOS {
                return Some(*libc::CMSG_DATA(c));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

#[test]
fn dscp_ef_marks_the_datagrams_on_the_wire() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    for (tos, want) in [(None, 0u8), (Some(0xb8u8), 0xb8u8)] {
        let config = TestConfig {
            protocol: Protocol::Udp,
            length: 1460,
            tos,
            ..Default::default()
        };
        let tx = linkperf::data::bind_udp("127.0.0.1:0".parse().unwrap(), &config).unwrap();
        tx.send_to(b"marked?", rx.local_addr().unwrap()).unwrap();
        assert_eq!(received_tos(&rx), Some(want), "tos {tos:?}");
    }
    // --dscp EF is DSCP 46, TOS 46 << 2 = 0xb8.
    let mut spec = linkperf::TestSpec::new("h");
    spec.set("dscp", "EF").unwrap();
    assert_eq!(spec.config().tos, Some(0xb8));
}
