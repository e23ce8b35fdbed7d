"""Itinerary rebooking: a travel-disruption desk where disruptions arrive on the clock.

Archetype ``async_event_trigger``: disruption events (delays, cancellations, gate changes,
hotel overbookings) are scheduled in the state with a ``fire_at`` time that the agent cannot
see. Every tool starts with :meth:`ItineraryRebooking._fire_due_events`, which applies each
pending event whose time has come (in ``fire_at`` order), posts notifications to the feed
and lets departed flights take off. The world therefore changes between two calls, and
the agent must react: rebook legs, realign hotel nights and transfers, notify, claim.
"""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta
from typing import Any

from envcraft import Entity, Environment, Initial, Job, Repository, iso, parse_time, tool

from .generate import Generator
from .rules import (
    HORIZON_DAYS,
    MAX_NIGHTS,
    SMS_MAX_CHARS,
    airport_info,
    carrier_alliances,
    change_fee,
    check_bookable,
    check_connections,
    compensation,
    fire_due_events,
    flight_times,
    flight_view,
    itinerary_issues,
    leg_view,
    move_rooms,
    night_dates,
    pickup_window,
    route,
    stay_view,
    stay_waived,
    take_rooms,
    transfer_view,
)
from .state import Channel, Claim, Flight, ItineraryState, Message, hotel_catalog, timetable_rows


class ItineraryRebooking(Environment):
    """Travel-disruption desk of a corporate travel agency.

    You look after travelers whose trips combine flights (legs), a hotel stay and an airport
    transfer. Disruptions (delays, cancellations, gate changes, hotel overbookings) arrive
    while you work and appear in the notification feed. Rebook affected legs within fare
    rules, seat inventory and minimum connection times, realign hotel nights and transfer
    pickups, notify the traveler, file the compensation they are owed, then acknowledge.
    Every call advances the clock by five minutes; flights depart on their own.
    """

    State = ItineraryState
    state: ItineraryState
    entities = (
        Entity("travelers", "traveler", ("{name} ({email})",), vary=("phone",)),
        Entity("itineraries", "trip", ("the trip booked under reference {reference}",)),
        Entity("legs", "flight leg", ("the {flight_id} leg of {itinerary_id}",)),
        Entity("flights", "flight", ("flight {flight_id}",), id_known=True),
        Entity("stays", "hotel stay", ("the hotel stay on {itinerary_id}",)),
        Entity("transfers", "airport transfer", ("the airport transfer on {itinerary_id}",)),
        Entity("hotels", "hotel", ("hotel {hotel_id}",), id_known=True),
        Entity("events", "disruption", ("the {kind} of {flight_id}", "the {kind} at {hotel_id}"), log=True),
        Entity("notifications", "notification", ("the {kind} notification for {itinerary_id}",), log=True),
        Entity("messages", "message to the traveler", ()),
        Entity("claims", "compensation claim", ("the claim for {itinerary_id}",)),
    )
    jobs = (
        Job(
            "re-time the pickup and tell the traveler",
            ("reschedule_transfer", "notify_traveler"),
            "have {transfer_id} pick the traveler up on {pickup_at:when} instead and let them know by "
            "{channel|email=email|sms=text message}, saying {message}",
            # what such a message says: the pickup moved ("Please call the travel desk if anything
            # about your trip is unclear." told the traveler nothing of it; round 50, R1)
            examples={
                "message": (
                    "Your airport pickup time has changed; please check the new time in your app.",
                    "Your driver will now meet you at a different time; the details are in your app.",
                    "We have moved your airport transfer; please check the new pickup time in the app.",
                )
            },
        ),
    )

    # -- the clock-driven part: called first by every tool -------------------------------------
    def _fire_due_events(self) -> None:
        """Apply every pending event whose time has come, then let departed flights take off."""
        fire_due_events(self.state, self.data, self.now())

    # -- reads -----------------------------------------------------------------------------------
    @tool(
        goal="the traveler[ is {traveler_name}][, reachable at {email}][, booked on flight {flight_id}]",
        read_only=True,
        produces=["itinerary_id", "traveler_id"],
    )
    def list_itineraries(
        self, traveler_name: str = "", email: str = "", flight_id: str = ""
    ) -> dict[str, Any]:
        """Find itineraries by traveler name, traveler email or a flight they are booked on; with
        no filter, every itinerary (each shows its booking reference).

        Args:
            traveler_name: Words that must all appear in the traveler's name (case does not matter).
            email: The traveler's exact email address.
            flight_id: Only itineraries with a leg on this flight, e.g. KL1293-20260313.

        Returns:
            Matching itineraries: id, booking reference, traveler, route and open notification count.
        """
        self._fire_due_events()
        words = traveler_name.lower().split()
        found = []
        for itinerary in sorted(self.state.itineraries.values(), key=lambda i: i.itinerary_id):
            traveler = self.state.travelers[itinerary.traveler_id]
            legs = [self.state.legs[lid] for lid in itinerary.leg_ids]
            if not all(w in traveler.name.lower() for w in words):
                continue
            if email and traveler.email != email.strip().lower():
                continue
            if flight_id and all(leg.flight_id != flight_id for leg in legs):
                continue
            found.append(
                {
                    "itinerary_id": itinerary.itinerary_id,
                    "reference": itinerary.reference,
                    "traveler_id": traveler.traveler_id,
                    "traveler_name": traveler.name,
                    "email": traveler.email,
                    "route": route(self.state, self.data, legs),
                    "open_notifications": sum(
                        1
                        for n in self.state.notifications.values()
                        if n.itinerary_id == itinerary.itinerary_id and n.acknowledged_at is None
                    ),
                }
            )
        return {"itineraries": found, "count": len(found), "now": iso(self.now())}

    @tool(
        read_only=True, consumes=["itinerary_id"], produces=["leg_id", "stay_id", "transfer_id", "flight_id"]
    )
    def get_itinerary(self, itinerary_id: str) -> dict[str, Any]:
        """Show an itinerary: traveler, legs with live flight status, hotel stay, transfer and open issues.

        Args:
            itinerary_id: The itinerary id, e.g. ITN-4003.

        Returns:
            The itinerary with its legs in travel order, stays, transfers, claims, unacknowledged
            notification ids and the list of issues that still need action.
        """
        self._fire_due_events()
        itinerary = self.lookup(self.state.itineraries, itinerary_id, "itinerary", itinerary_id=itinerary_id)
        traveler = self.state.travelers[itinerary.traveler_id]
        legs = [leg_view(self.state, self.data, self.state.legs[lid]) for lid in itinerary.leg_ids]
        stays = [stay_view(self.data, s) for s in self.state.stays.values() if s.itinerary_id == itinerary_id]
        transfers = [
            transfer_view(self.state, self.data, t, self.now())
            for t in self.state.transfers.values()
            if t.itinerary_id == itinerary_id
        ]
        return {
            "itinerary_id": itinerary_id,
            "reference": itinerary.reference,
            "fare_class": itinerary.fare_class,
            "traveler": traveler.model_dump(),
            "legs": legs,
            "stays": stays,
            "transfers": transfers,
            "claims": [c.model_dump() for c in self.state.claims.values() if c.itinerary_id == itinerary_id],
            "unacknowledged_notifications": sorted(
                n.notification_id
                for n in self.state.notifications.values()
                if n.itinerary_id == itinerary_id and n.acknowledged_at is None
            ),
            "issues": itinerary_issues(self.state, self.data, itinerary),
            "now": iso(self.now()),
        }

    @tool(read_only=True, produces=["notification_id", "event_id", "itinerary_id"])
    def list_notifications(
        self, itinerary_id: str = "", include_acknowledged: bool = False
    ) -> dict[str, Any]:
        """Read the disruption feed: one notification per disruption and affected itinerary.

        Args:
            itinerary_id: Only notifications for this itinerary; all itineraries when empty.
            include_acknowledged: Also list notifications that were already acknowledged.

        Returns:
            Notifications, oldest first: id, disruption (event) id, kind, itinerary, summary, times.
        """
        self._fire_due_events()
        if itinerary_id:
            self.lookup(self.state.itineraries, itinerary_id, "itinerary", itinerary_id=itinerary_id)
        feed = [
            n.model_dump()
            for n in sorted(
                self.state.notifications.values(), key=lambda n: (n.created_at, n.notification_id)
            )
            if (not itinerary_id or n.itinerary_id == itinerary_id)
            and (include_acknowledged or n.acknowledged_at is None)
        ]
        return {"notifications": feed, "count": len(feed), "now": iso(self.now())}

    @tool(read_only=True, produces=["flight_id"])
    def search_flights(
        self, origin: str, destination: str, date: str, earliest_departure: str = ""
    ) -> dict[str, Any]:
        """Search operated flights between two airports on one day, with live status and seats left.

        Args:
            origin: IATA code of the departure airport, e.g. AMS.
            destination: IATA code of the arrival airport, e.g. BCN.
            date: Departure date (YYYY-MM-DD, UTC).
            earliest_departure: Only flights whose estimated departure is at or after this time
                (ISO 8601, UTC); no lower bound when empty.

        Returns:
            Flights sorted by estimated departure: id, carrier and alliance, scheduled and estimated
            times, status and seats left.
        """
        self._fire_due_events()
        airports = airport_info(self.data)
        for field, code in (("origin", origin), ("destination", destination)):
            if code.upper() not in airports:
                self.fail("not_found", f"unknown airport '{code}'", field=field, airports=sorted(airports))
        day = self._parse_date(date, "date")
        after = self._parse_time(earliest_departure, "earliest_departure") if earliest_departure else None
        tt, alliances = timetable_rows(self.data), carrier_alliances(self.data)
        found = []
        for flight in self.state.flights.values():
            if flight.date != day:
                continue
            times = flight_times(tt, flight)
            if (times.origin, times.destination) != (origin.upper(), destination.upper()):
                continue
            if after is not None and times.departure < after:
                continue
            found.append((times.departure, flight.flight_id, flight_view(flight, times, alliances)))
        found.sort(key=lambda item: (item[0], item[1]))
        return {"flights": [view for _, _, view in found], "count": len(found), "now": iso(self.now())}

    @tool(read_only=True, produces=["hotel_id"])
    def search_hotels(self, city: str, check_in: str, nights: int) -> dict[str, Any]:
        """Find hotels in a city with a free room for every night of a stay.

        Args:
            city: IATA code of the city's airport, e.g. LIS.
            check_in: Check-in date (YYYY-MM-DD).
            nights: Number of nights (1 to 7).

        Returns:
            Hotels with rooms for all nights: id, name, nightly rate, total price, rooms left per night.
        """
        self._fire_due_events()
        if city.upper() not in airport_info(self.data):
            self.fail("not_found", f"unknown city '{city}'", field="city")
        nights_list = self._stay_nights(check_in, nights)
        found = []
        for hotel_id, info in sorted(hotel_catalog(self.data).items()):
            if info["city"] != city.upper():
                continue
            inventory = self.state.hotels.get(hotel_id)  # a hotel without one has no room to sell
            rooms = inventory.rooms_left if inventory is not None else {}
            if all(rooms.get(n, 0) > 0 for n in nights_list):
                found.append(
                    {
                        "hotel_id": hotel_id,
                        "name": info["name"],
                        "nightly_rate_eur": info["nightly_rate_eur"],
                        "total_eur": info["nightly_rate_eur"] * nights,
                        "rooms_left": {n: rooms[n] for n in nights_list},
                    }
                )
        return {"hotels": found, "count": len(found)}

    # -- writes ----------------------------------------------------------------------------------
    @tool(goal="rebook {leg_id} onto flight {flight_id}", consumes=["leg_id", "flight_id"])
    def rebook_leg(self, leg_id: str, flight_id: str) -> dict[str, Any]:
        """Move one leg to another flight on the same route, releasing its old seat.

        Changes are free when the leg is disrupted (its flight is cancelled, delayed by 120 min or
        more, its inbound connection is broken, or it was missed); otherwise the fare class
        decides whether a voluntary change is allowed and what it costs. The new flight must keep
        minimum connection times with the legs before and after it.

        Args:
            leg_id: The leg to move, e.g. LEG-0007.
            flight_id: The new flight, e.g. KL1293-20260313 (from search_flights).

        Returns:
            The updated leg with its new flight, the change fee charged and the itinerary's
            remaining issues.
        """
        self._fire_due_events()
        leg = self.lookup(self.state.legs, leg_id, "leg", leg_id=leg_id)
        if leg.status == "flown":
            self.fail(
                "invalid_transition",
                f"leg {leg_id} was already flown on {leg.flight_id}; it cannot be changed",
                leg_id=leg_id,
                status=leg.status,
            )
        new = self._flight(flight_id)
        if new.flight_id == leg.flight_id:
            self.fail("invalid_argument", f"leg {leg_id} is already on {flight_id}", field="flight_id")
        tt = timetable_rows(self.data)
        current = self.state.flights[leg.flight_id]
        old_times, new_times = flight_times(tt, current), flight_times(tt, new)
        if (new_times.origin, new_times.destination) != (old_times.origin, old_times.destination):
            self.fail(
                "invalid_argument",
                f"{flight_id} flies {new_times.origin}→{new_times.destination}, but leg {leg_id} "
                f"is {old_times.origin}→{old_times.destination}",
                field="flight_id",
            )
        check_bookable(self.data, new, new_times, self.now())
        fee = change_fee(self.state, self.data, leg, current, old_times, new_times)
        check_connections(self.state, self.data, leg, new_times)
        current.seats_left += 1
        new.seats_left -= 1
        leg.previous_flight_ids.append(leg.flight_id)
        leg.flight_id = new.flight_id
        leg.status = "confirmed"
        leg.change_fees_eur += fee
        itinerary = self.state.itineraries[leg.itinerary_id]
        return {
            "leg": leg_view(self.state, self.data, leg),
            "change_fee_eur": fee,
            "released_flight_id": current.flight_id,
            "issues": itinerary_issues(self.state, self.data, itinerary),
        }

    @tool(goal="move {stay_id} to a check-in on {check_in:date} for {nights} night(s)", consumes=["stay_id"])
    def change_hotel_dates(self, stay_id: str, check_in: str, nights: int) -> dict[str, Any]:
        """Move a hotel stay to new dates in the same hotel.

        Non-refundable stays can only change when one of their linked legs was disrupted or
        rebooked (the disruption waiver).

        Args:
            stay_id: The stay, e.g. STY-0004.
            check_in: New check-in date (YYYY-MM-DD).
            nights: New number of nights (1 to 7).

        Returns:
            The updated stay and the itinerary's remaining issues.
        """
        self._fire_due_events()
        stay = self.lookup(self.state.stays, stay_id, "hotel stay", stay_id=stay_id)
        if stay.status == "walked":
            self.fail(
                "invalid_transition",
                f"stay {stay_id} is walked (the hotel is overbooked); relocate it to another hotel first",
                stay_id=stay_id,
                status=stay.status,
            )
        new_nights = self._stay_nights(check_in, nights)
        if (check_in, nights) == (stay.check_in, stay.nights):
            self.fail("invalid_argument", f"stay {stay_id} already has these dates", field="check_in")
        if stay.rate == "non_refundable" and not stay_waived(self.state, stay):
            self.fail(
                "permission_denied",
                f"stay {stay_id} has a non-refundable rate and none of its legs was disrupted; "
                "date changes are not permitted",
                stay_id=stay_id,
                missing_permission="date_change",
                rate=stay.rate,
            )
        move_rooms(self.state, stay, stay.hotel_id, new_nights)
        stay.check_in, stay.nights = check_in, nights
        return {
            "stay": stay_view(self.data, stay),
            "issues": itinerary_issues(self.state, self.data, self.state.itineraries[stay.itinerary_id]),
        }

    @tool(goal="move {stay_id} to {hotel_id}", consumes=["stay_id", "hotel_id"])
    def relocate_hotel_stay(self, stay_id: str, hotel_id: str) -> dict[str, Any]:
        """Move a walked stay (its hotel is overbooked) to another hotel in the same city, same dates.

        Args:
            stay_id: The walked stay, e.g. STY-0004.
            hotel_id: The new hotel, e.g. HTL-LIS-03 (from search_hotels).

        Returns:
            The stay, now booked at the new hotel, and the itinerary's remaining issues.
        """
        self._fire_due_events()
        stay = self.lookup(self.state.stays, stay_id, "hotel stay", stay_id=stay_id)
        if stay.status != "walked":
            self.fail(
                "invalid_transition",
                f"stay {stay_id} is {stay.status}; only walked stays are relocated "
                "(use change_hotel_dates to change dates)",
                stay_id=stay_id,
                status=stay.status,
            )
        catalog = hotel_catalog(self.data)
        if hotel_id not in catalog:
            self.fail("not_found", f"no hotel '{hotel_id}'", hotel_id=hotel_id)
        city = catalog[stay.hotel_id]["city"]
        if catalog[hotel_id]["city"] != city:
            self.fail(
                "invalid_argument",
                f"{hotel_id} is in {catalog[hotel_id]['city']}, the stay is in {city}",
                field="hotel_id",
            )
        if hotel_id == stay.hotel_id:
            self.fail("invalid_argument", f"{hotel_id} is the hotel that walked this stay", field="hotel_id")
        take_rooms(self.state, hotel_id, night_dates(stay.check_in, stay.nights))
        stay.previous_hotel_ids.append(stay.hotel_id)
        stay.hotel_id = hotel_id
        stay.status = "booked"
        return {
            "stay": stay_view(self.data, stay),
            "issues": itinerary_issues(self.state, self.data, self.state.itineraries[stay.itinerary_id]),
        }

    @tool(goal="move the pickup of {transfer_id} to {pickup_at:when}", consumes=["transfer_id"])
    def reschedule_transfer(self, transfer_id: str, pickup_at: str) -> dict[str, Any]:
        """Move an airport transfer's pickup time to fit its flight's estimated arrival.

        The pickup must be 20 to 90 minutes after the estimated arrival, and a transfer can no
        longer change once its driver is dispatched (30 minutes before the current pickup).

        Args:
            transfer_id: The transfer, e.g. TRF-0002.
            pickup_at: New pickup time (ISO 8601, UTC), e.g. 2026-03-13T14:45:00Z.

        Returns:
            The updated transfer with its allowed pickup window.
        """
        self._fire_due_events()
        transfer = self.lookup(self.state.transfers, transfer_id, "transfer", transfer_id=transfer_id)
        new_pickup = self._parse_time(pickup_at, "pickup_at")
        rules = self.data.json("transfers.json")
        lead = timedelta(minutes=rules["dispatch_lead_minutes"])
        if self.now() >= parse_time(transfer.pickup_at) - lead:
            self.fail(
                "invalid_transition",
                f"transfer {transfer_id} is already dispatched (pickup {transfer.pickup_at})",
                transfer_id=transfer_id,
                status="dispatched",
            )
        window = pickup_window(self.state, self.data, transfer)
        if window is None:
            self.fail(
                "conflict",
                f"leg {transfer.leg_id} of transfer {transfer_id} has no flight to meet "
                "(cancelled or missed); rebook the leg first",
                leg_id=transfer.leg_id,
            )
        earliest, latest = window
        if not earliest <= new_pickup <= latest:
            self.fail(
                "conflict",
                f"pickup must be between {iso(earliest)} and {iso(latest)} for the flight's arrival",
                earliest=iso(earliest),
                latest=iso(latest),
            )
        if new_pickup - lead <= self.now():
            self.fail("conflict", "too short notice: the pickup must be more than 30 minutes from now")
        transfer.pickup_at = iso(new_pickup)
        return {"transfer": transfer_view(self.state, self.data, transfer, self.now())}

    @tool(
        goal="message the traveler of {itinerary_id} by {channel|email=email|sms=text message}, saying "
        "{message}",
        consumes=["itinerary_id"],
        produces=["message_id"],
        examples={
            "message": (
                "Your trip has changed; please check the new itinerary in your app.",
                # true of any trip the desk works on: "your disrupted trip" of a trip no
                # disruption touched, or "we are rebooking you" where nothing is rebooked, told
                # the traveler what the world does not hold (round 41, R1, R2)
                "Please check the latest times of your trip in the app.",
                "Please call the travel desk if anything about your trip is unclear.",
            )
        },
    )
    def notify_traveler(self, itinerary_id: str, channel: Channel, message: str) -> dict[str, Any]:
        """Send the traveler a message about their itinerary.

        Args:
            itinerary_id: The itinerary the message is about.
            channel: "email", or "sms" (only for travelers with a phone who opted in; 320 characters
                at most).
            message: The text: what changed and what the traveler should do.

        Returns:
            The message id, where it was sent and when.
        """
        self._fire_due_events()
        itinerary = self.lookup(self.state.itineraries, itinerary_id, "itinerary", itinerary_id=itinerary_id)
        traveler = self.state.travelers[itinerary.traveler_id]
        text = message.strip()
        if not text:
            self.fail("invalid_argument", "message must not be empty", field="message")
        if channel == "sms":
            if traveler.phone is None or not traveler.sms_opt_in:
                self.fail(
                    "permission_denied",
                    f"traveler {traveler.traveler_id} has not opted in to SMS; use email",
                    traveler_id=traveler.traveler_id,
                    missing_permission="sms_opt_in",
                )
            if len(text) > SMS_MAX_CHARS:
                self.fail(
                    "invalid_argument", f"an SMS holds at most {SMS_MAX_CHARS} characters", field="message"
                )
        mid = f"MSG-{self.state.next_message:04d}"
        self.state.next_message += 1
        self.state.messages[mid] = Message(
            message_id=mid,
            itinerary_id=itinerary_id,
            traveler_id=traveler.traveler_id,
            channel=channel,
            text=text,
            sent_at=iso(self.now()),
        )
        to = traveler.email if channel == "email" else traveler.phone
        return {"message_id": mid, "channel": channel, "to": to, "sent_at": iso(self.now())}

    @tool(
        goal="file the compensation the traveler of {itinerary_id} is owed for {event_id}",
        consumes=["itinerary_id", "event_id"],
        produces=["claim_id"],
    )
    def file_compensation_claim(self, itinerary_id: str, event_id: str) -> dict[str, Any]:
        """File the compensation a traveler is owed for one disruption, at most once.

        The amount follows data/compensation_policy.json: cancellations and arrival delays of 180
        minutes or more pay by distance band unless the cause is extraordinary (weather, air
        traffic control, security); a cancellation claim needs the leg rebooked first, and is
        halved when the new flight arrived soon enough. A hotel overbooking pays the hotel's walk
        compensation. Gate changes pay nothing.

        Args:
            itinerary_id: The affected itinerary.
            event_id: The disruption id, as given in the notification (e.g. EVT-004).

        Returns:
            The claim: id, kind, amount in euros and how it was computed.
        """
        self._fire_due_events()
        itinerary = self.lookup(self.state.itineraries, itinerary_id, "itinerary", itinerary_id=itinerary_id)
        event = self.state.events.get(event_id)
        if event is None or event.fired_at is None:
            self.fail("not_found", f"no disruption '{event_id}'", event_id=event_id)
        if not any(
            n.event_id == event_id and n.itinerary_id == itinerary_id
            for n in self.state.notifications.values()
        ):
            self.fail(
                "invalid_argument",
                f"disruption {event_id} did not affect itinerary {itinerary_id}",
                field="event_id",
            )
        previous = next(
            (
                c
                for c in self.state.claims.values()
                if c.event_id == event_id and c.traveler_id == itinerary.traveler_id
            ),
            None,
        )
        if previous is not None:
            self.fail(
                "conflict",
                f"compensation for {event_id} was already claimed ({previous.claim_id})",
                claim_id=previous.claim_id,
            )
        kind, amount, basis = compensation(self.state, self.data, itinerary, event)
        cid = f"CLM-{self.state.next_claim:04d}"
        self.state.next_claim += 1
        claim = Claim(
            claim_id=cid,
            itinerary_id=itinerary_id,
            traveler_id=itinerary.traveler_id,
            event_id=event_id,
            kind=kind,
            amount_eur=amount,
            basis=basis,
            filed_at=iso(self.now()),
        )
        self.state.claims[cid] = claim
        return claim.model_dump()

    @tool(goal="close {notification_id}", consumes=["notification_id"])
    def acknowledge_notification(self, notification_id: str) -> dict[str, Any]:
        """Close a notification once its itinerary is fully handled.

        Acknowledging is refused while the itinerary still has issues (see get_itinerary): legs on
        cancelled or missed flights, broken connections, walked or misdated hotel stays, transfers
        that no longer fit, or a traveler not yet told about the latest disruption.

        Args:
            notification_id: The notification, e.g. NTF-0003.

        Returns:
            The acknowledged notification.
        """
        self._fire_due_events()
        notification = self.lookup(
            self.state.notifications, notification_id, "notification", notification_id=notification_id
        )
        if notification.acknowledged_at is not None:
            self.fail(
                "invalid_transition",
                f"notification {notification_id} was already acknowledged at {notification.acknowledged_at}",
                notification_id=notification_id,
                status="acknowledged",
            )
        issues = itinerary_issues(self.state, self.data, self.state.itineraries[notification.itinerary_id])
        if issues:
            self.fail(
                "conflict",
                f"itinerary {notification.itinerary_id} still has {len(issues)} open issue(s)",
                itinerary_id=notification.itinerary_id,
                issues=issues,
            )
        notification.acknowledged_at = iso(self.now())
        return notification.model_dump()

    # -- argument checks -------------------------------------------------------------------------
    def _flight(self, flight_id: str) -> Flight:
        flight = self.state.flights.get(flight_id)
        if flight is None:
            self.fail(
                "not_found",
                f"no operated flight '{flight_id}' (ids look like KL1293-20260313)",
                flight_id=flight_id,
            )
        return flight

    def _parse_date(self, value: str, field: str) -> str:
        try:
            day = date.fromisoformat(value.strip())
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be a date like 2026-03-13, got '{value}'", field=field
            )
        first = self.clock.base_time.date()
        last = first + timedelta(days=HORIZON_DAYS - 1)
        if not first <= day <= last:
            self.fail(
                "invalid_argument",
                f"{field} must be between {first.isoformat()} and {last.isoformat()}",
                field=field,
            )
        return day.isoformat()

    def _parse_time(self, value: str, field: str) -> datetime:
        try:
            return parse_time(value.strip())
        except ValueError:
            self.fail(
                "invalid_argument", f"{field} must be an ISO 8601 time like 2026-03-13T14:45:00Z", field=field
            )

    def _stay_nights(self, check_in: str, nights: int) -> list[str]:
        day = self._parse_date(check_in, "check_in")
        if not 1 <= nights <= MAX_NIGHTS:
            self.fail("invalid_argument", f"nights must be between 1 and {MAX_NIGHTS}", field="nights")
        stay_nights = night_dates(day, nights)
        last = (self.clock.base_time.date() + timedelta(days=HORIZON_DAYS - 1)).isoformat()
        if stay_nights[-1] > last:
            self.fail(
                "invalid_argument", f"hotel nights can be booked up to the night of {last}", field="nights"
            )
        return stay_nights

    # -- initial states ----------------------------------------------------------------------------
    @classmethod
    def generate(cls, seed: int = 0, size: int = 1, data: Repository | None = None) -> Initial:
        """``5 * size`` travelers (two share a name, one travels with a colleague) on 1–2 leg trips
        with hotel stays and transfers, the full three-day timetable, and ``8 * size`` disruptions
        scheduled over the first three hours."""
        generator = Generator(random.Random(seed), cls.repository(data), cls.base_time())
        return Initial(state=generator.build(max(1, size)))
